// kubelet's memory manager checkpoint (`<root-dir>/memory_manager_state`), read and written as
// kubelet 1.35 does (pkg/kubelet/cm/memorymanager/state):
//
//   {"policyName":"Static",
//    "machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"memory":{"total":T,"systemReserved":S,
//                    "allocatable":A,"reserved":R,"free":F},...},"cells":[0]}},
//    "entries":{"<pod uid>":{"<container>":[{"numaAffinity":[0],"type":"memory","size":N}]}},
//    "checksum":N}
//
// The checksum is kubelet's (vri/kubelet_checkpoint_text.h). kubelet's static policy, starting on the
// file, computes the machine state again from the node (cadvisor's memory and hugepages per NUMA
// node, its reservedMemory) and the entries, and refuses to start when the file's differs ("the
// expected machine state is different from the real one", policy_static.go validateState).
// kubeletMachineState is that computation, so a file written with it is one kubelet accepts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "accounting/topology.h"
#include "base/result.h"

namespace vri {

struct KubeletMemoryTable {
  uint64_t total = 0;
  uint64_t systemReserved = 0;
  uint64_t allocatable = 0;
  uint64_t reserved = 0;
  uint64_t free = 0;
  bool operator==(const KubeletMemoryTable&) const = default;
};

struct KubeletNumaNodeState {
  int assignments = 0;  // blocks that name this node: a container with memory and hugepages counts twice
  std::map<std::string, KubeletMemoryTable> memoryMap;  // "memory", "hugepages-2Mi", ...
  std::vector<int> cells;  // the NUMA nodes this one's memory is assigned together with, itself among them
  bool operator==(const KubeletNumaNodeState&) const = default;
};

struct KubeletMemoryBlock {
  std::vector<int> numaAffinity;
  std::string type;  // "memory", "hugepages-2Mi", ...
  uint64_t size = 0;
  bool operator==(const KubeletMemoryBlock&) const = default;
};

// pod UID -> container name -> its blocks
using KubeletMemoryAssignments = std::map<std::string, std::map<std::string, std::vector<KubeletMemoryBlock>>>;

struct MemoryManagerCheckpoint {
  std::string policyName;  // "Static" or "None"
  std::map<int, KubeletNumaNodeState> machineState;
  KubeletMemoryAssignments entries;
  uint64_t checksum = 0;  // as read; encode computes its own
};

// kubelet's reservedMemory: NUMA node -> resource name -> bytes.
using KubeletReservedMemory = std::map<int, std::map<std::string, uint64_t>>;

// The machine state kubelet's static policy expects for `entries` on a node with `nodes` (each NUMA
// node's MemTotal and hugepage pools, as cadvisor reports them) and `reserved`. Refuses what kubelet
// would refuse: a block on a NUMA node or of a resource the node lacks, a reservation on a node that
// does not exist or larger than what it holds, and one NUMA node in two groups (kubelet keeps the
// groups disjoint; its check would depend on its map order).
Result<std::map<int, KubeletNumaNodeState>> kubeletMachineState(const std::vector<NumaNode>& nodes,
                                                                const KubeletReservedMemory& reserved,
                                                                const KubeletMemoryAssignments& entries);

uint32_t memoryManagerChecksum(const MemoryManagerCheckpoint& checkpoint);

// The file's text as kubelet writes it, with the checksum computed.
std::string encodeMemoryCheckpoint(const MemoryManagerCheckpoint& checkpoint);

// Parses the file's text; a checksum that is not 0 and not the contents' is refused, as kubelet
// refuses it.
Result<MemoryManagerCheckpoint> parseMemoryManagerCheckpoint(std::string_view text, const std::string& origin);

}  // namespace vri
