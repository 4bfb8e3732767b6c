// NUMA alignment of a tenant's CPUs and memory, with kubelet's topology-manager
// policies: none, best-effort, restricted, single-numa-node.
//
// The scope is the caller's: with scope container each container is aligned
// on its own; with scope pod (and always for a VM) the whole tenant's request
// is aligned at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "accounting/numa_memory.h"
#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

enum class TopologyPolicy { kNone, kBestEffort, kRestricted, kSingleNumaNode };
Result<TopologyPolicy> parseTopologyPolicy(std::string_view text);  // "none", "best-effort", ...
std::string_view topologyPolicyName(TopologyPolicy policy);

struct TopologyManagerOptions {
  TopologyPolicy policy = TopologyPolicy::kNone;
  // Among equally narrow fits, take the nodes closest to each other (hwloc distances).
  bool preferClosestNumaNodes = false;
};

struct AlignmentRequest {
  std::string who;  // for messages
  int cpus = 0;     // exclusive CPUs
  MemoryRequest memory;
};

struct NumaAffinity {
  std::vector<int> nodes;  // empty: no alignment (policy none)
  // As narrow as the request could ever be on this machine, empty or not.
  bool preferred = true;
};

// Finds the narrowest set of NUMA nodes whose free CPUs and free memory of
// every resource hold the request, preferring (with the option) the closest
// nodes, then the lowest ids. restricted refuses a fit that is not preferred;
// single-numa-node refuses anything wider than one node. Any number of NUMA
// nodes is supported: sets are searched by size, narrowest first.
Result<NumaAffinity> alignOnNuma(const Topology& topology, const CpuSet& freeCpus, const NumaMemory& memory,
                                 const AlignmentRequest& request, const TopologyManagerOptions& options);

}  // namespace vri
