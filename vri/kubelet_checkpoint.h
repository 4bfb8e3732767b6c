// kubelet's CPU manager checkpoint (`<root-dir>/cpu_manager_state`), read and written as kubelet
// 1.35 does (pkg/kubelet/cm/cpumanager/state/checkpoint.go, format v2):
//
//   {"policyName":"static","defaultCpuSet":"0,3-7","entries":{"<pod uid>":{"<container>":"1-2"}},"checksum":N}
//
// The checksum is FNV-32a over the checkpoint (checksum 0) as go-spew prints it with `%#v`, sorted
// keys and no pointer addresses (k8s.io/utils/dump.ForHash). kubelet refuses to start on a file
// whose checksum is wrong ("checkpoint is corrupted"), and on one whose policy is not its own
// ("configured policy ... differs from state checkpoint policy ..."), so both directions of a
// change of hands go through this file: VRI checks that kubelet left none behind before it takes
// a node over, and writes kubelet's when it hands the node back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vri {

struct CpuManagerCheckpoint {
  std::string policyName;     // "static" or "none"
  std::string defaultCpuSet;  // Linux list format; the shared pool kubelet's static policy keeps
  // pod UID -> container name -> its exclusive CPUs (list format). Only exclusive containers.
  std::map<std::string, std::map<std::string, std::string>> entries = {};
  uint64_t checksum = 0;  // as read; encode() computes its own
};

// kubelet's checksum of `checkpoint` (its own checksum field taken as 0).
uint32_t kubeletChecksum(const CpuManagerCheckpoint& checkpoint);

// The file's text as kubelet writes it, with the checksum computed.
std::string encodeCheckpoint(const CpuManagerCheckpoint& checkpoint);

// Parses the file's text (`origin` names it in errors). A checksum that is not 0 and not the
// checkpoint's is refused, as kubelet refuses it; 0 is accepted, as kubelet accepts it.
Result<CpuManagerCheckpoint> parseCpuManagerCheckpoint(std::string_view text, const std::string& origin);

// The policyName of any of kubelet's manager checkpoints (cpu_manager_state, memory_manager_state),
// without judging the rest: what a node's next kubelet start will compare with its configuration.
Result<std::string> checkpointPolicyName(std::string_view text, const std::string& origin);

}  // namespace vri
