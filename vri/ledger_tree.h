// The cgroups the ledger implies: each tenant's cpuset (exclusive CPUs or the
// shared pool), NUMA memory and kubelet's values, for the node tree builder.
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
  NodeAllocatable allocatable;  // a copy: a policy change replaces CgroupSync's
  int64_t sharedVcpuMilli = 1000;
};

// The node-level values of `state`: the shared pool, the CPUs parents hold
// for starting VMs and pending writes, and the sums over every tenant (from
// the pool's grants and the ledger's totals, not from a walk over the tenants).
NodeResources nodeResources(const LedgerState& state, const LedgerTreeInputs& inputs);

// Its hugetlb limits only for the page sizes the node has.
PodCgroup podCgroup(const PodRecord& pod, const Topology& topology);
VmCgroup vmCgroup(const VmRecord& vm, const CgroupPath& scope, int64_t sharedVcpuMilli);

// The whole tree, for reconcile. VMs without a scope (not started yet, or
// only reserved) have no cgroups to write.
Result<DesiredTree> desiredTreeFromLedger(const LedgerState& state, const LedgerTreeInputs& inputs);

// cpuset.mems for the whole node: every NUMA node with memory.
CpuSet nodeMemoryNodes(const Topology& topology);

}  // namespace vri
