// The cgroup tree the ledger implies: each tenant's cpuset (exclusive CPUs or
// the shared pool), NUMA memory and kubelet's values, for the node tree builder.
#pragma once

#include <map>
#include <string>

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "cgroup-model/node_tree.h"

namespace vri {

struct LedgerTreeInputs {
  const Topology& topology;
  const TreeLayout& layout;
  const NodeAllocatable& allocatable;
  int64_t sharedVcpuMilli = 1000;
  // VM UUID -> its scope, found through its QEMU pid. VMs without one (not
  // started yet, or only reserved) have no cgroups to write.
  const std::map<std::string, CgroupPath>& vmScopes;
};

// Containers without a runtime id yet have no cgroup and are left out.
Result<DesiredTree> desiredTreeFromLedger(const LedgerSnapshot& snapshot, const LedgerTreeInputs& inputs);

// cpuset.mems for the whole node: every NUMA node with memory.
CpuSet nodeMemoryNodes(const Topology& topology);

}  // namespace vri
