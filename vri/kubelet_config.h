// kubelet's configuration file, as far as vrid holds the same settings.
//
// vrid keeps its own copy of what kubelet is told about the node's CPUs and
// memory (reservations, eviction, the topology manager, the cgroup root),
// because it admits pods against the same allocatable kubelet computes. Two
// copies drift, so with `kubelet_config` set vrid reads kubelet's file
// (kubelet.config.k8s.io/v1beta1 KubeletConfiguration, YAML or JSON) at start
// and refuses to run while any of them differs, naming each one.
//
// kubelet's cgroupDriver is not compared: kubelet 1.35 takes its driver from
// the runtime's RuntimeConfig answer and ignores the file's, so the shim
// checks the driver there (CriShim::runtimeConfig, kubelet-bridge/cri-shim/cri_shim.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpuset.h"
#include "base/quantity.h"
#include "base/result.h"
#include "vri/daemon_config.h"
#include "vri/kubelet_memory_checkpoint.h"

namespace vri {

// The settings, each with kubelet's own default where the file leaves it out.
struct KubeletSettings {
  std::optional<CpuSet> reservedSystemCpus;  // reservedSystemCPUs; nullopt: unset
  Quantity systemReservedCpu, kubeReservedCpu;
  Quantity systemReservedMemory, kubeReservedMemory;
  // evictionHard's memory.available; nullopt: a percentage, which vrid, holding an amount, cannot match.
  std::optional<Quantity> evictionHardMemory;
  std::string evictionHardMemoryText;  // as the file says it, for messages
  // reservedMemory: what the memory manager's static policy keeps back on each NUMA node.
  KubeletReservedMemory reservedMemory;
  std::string cpuManagerPolicy = "none";
  std::string memoryManagerPolicy = "None";
  std::string topologyManagerPolicy = "none";
  std::string topologyManagerScope = "container";
  bool preferClosestNumaNodes = false;  // topologyManagerPolicyOptions
  bool cgroupsPerQos = true;
  std::string cgroupRoot = "/";
};

// Parses the file's text; `origin` names it in errors. A file that is not a
// KubeletConfiguration, or whose values do not parse, is refused.
Result<KubeletSettings> parseKubeletConfig(std::string_view text, const std::string& origin);

// Every setting where vrid and kubelet differ, one sentence each; empty when they agree.
std::vector<std::string> kubeletMismatches(const DaemonConfig& config, const KubeletSettings& kubelet);

// Reads config.kubeletConfig (when set) and refuses a mismatch, listing every difference; while
// kubelet's CPU or memory manager is on, the refusal names the takeover's steps.
Result<void> checkKubeletConfig(const DaemonConfig& config);

// The steps that take a node over from kubelet's CPU and memory managers, in the order that works.
std::string takeoverSteps(const DaemonConfig& config);

// Refuses while a checkpoint of kubelet's CPU or memory manager under config.kubeletRootDir names a
// policy other than none: kubelet's manager holds the node (and kubelet, set to none, would not start).
Result<void> checkKubeletCheckpoints(const DaemonConfig& config);

}  // namespace vri
