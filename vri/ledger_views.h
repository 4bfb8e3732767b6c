// What the API shows of one published ledger state: the node, the tenants,
// one tenant. Free functions over `const LedgerState&`: they read, never
// decide, and need nothing of the daemon beyond what `LedgerViewFacts` holds.
#pragma once

#include <string>

#include "accounting/ledger.h"
#include "cgroup-model/kubelet_namer.h"
#include "proto/vri.pb.h"
#include "vri/node_manager.h"

namespace vri {

// What the views need that the state does not hold.
struct LedgerViewFacts {
  const KubeletNamer& namer;       // the node's pod and container paths
  CpuSet wideShared;               // a shared container's cpuset.cpus as written (CgroupSync::wideSharedCpus)
  uint64_t vmMemoryOverheadBytes;  // added to every VM's memory
};

// GetNode's ledger part: the topology, the pools, the totals and the node's facts.
void fillNode(const LedgerState& state, const Topology& topology, const NodeFacts& facts, v1::Node& reply);
// ListTenants: pods, VMs or both, with the state's sequence.
void listTenants(const LedgerState& state, const LedgerViewFacts& facts, v1::ListTenantsRequest::Kind kind,
                 v1::TenantList& reply);
// GetTenant: a pod by UID or name, a VM by UUID or name; a name two tenants share is refused.
Result<void> getTenant(const LedgerState& state, const LedgerViewFacts& facts, const v1::GetTenantRequest& request,
                       v1::Tenant& reply);
// A VM by UUID or name.
Result<const VmRecord*> findVm(const LedgerState& state, const std::string& key);
void fillVm(const LedgerState& state, const LedgerViewFacts& facts, const VmRecord& vm, v1::VmInfo& out);

}  // namespace vri
