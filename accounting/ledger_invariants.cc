#include "accounting/ledger.h"

namespace vri {

Result<void> checkLedgerInvariants(const LedgerState& s, const Topology& topology, const LedgerConfig& config) {
  // The totals are kept per decision: they must equal a recount.
  LedgerTotals recount;
  for (const auto& [uid, pod] : s.pods) recount += podTotals(pod);
  for (const auto& [uuid, vm] : s.vms) {
    recount += vmTotals(vm, s.vmScopes.count(uuid) > 0, config.sharedVcpuMilli, config.vmMemoryOverheadBytes);
  }
  if (recount != s.totals) return Error::internal("the ledger's totals disagree with a recount of its tenants");
  CpuSet owned;
  for (const auto& [owner, grant] : s.grants()) {
    if (grant.all().intersects(owned))
      return Error::internal("CPUs " + (grant.all() & owned).format() + " in two exclusive sets");
    if (grant.all().intersects(s.reserved())) return Error::internal(owner + " holds reserved CPUs");
    if (!grant.all().isSubsetOf(topology.onlineCpus()))
      return Error::internal(owner + " holds CPUs that are not online");
    owned |= grant.all();
  }
  const CpuSet base = config.pool.reserved.strict ? topology.onlineCpus() - s.reserved() : topology.onlineCpus();
  if (s.shared() != base - owned) {
    return Error::internal("shared pool " + s.shared().format() + " is not " + (base - owned).format());
  }
  if (s.totals.sharedTenants > 0 && s.shared().empty())
    return Error::internal("the shared pool is empty under shared tenants");
  if (s.totals.sharedDemandMilli > static_cast<int64_t>(s.shared().count()) * 1000) {
    return Error::internal("shared tenants request " + std::to_string(s.totals.sharedDemandMilli) + "m of " +
                           std::to_string(s.shared().count()) + " shared CPUs");
  }
  if (config.allocatableMemoryBytes > 0 && s.totals.admittedMemoryBytes > config.allocatableMemoryBytes) {
    return Error::internal("admitted memory above allocatable");
  }
  // Runtime ids: each held by exactly the record that names it.
  size_t runtime_ids = 0;
  for (const auto& entry : s.pods) {
    const std::string& uid = entry.first;  // named, not bound: lambdas capture it (clang 14)
    const PodRecord& pod = entry.second;
    const auto check = [&](const std::string& id, const RuntimeOwner& owner) -> Result<void> {
      if (id.empty()) return {};
      ++runtime_ids;
      const RuntimeOwner* held = s.runtimeOwner(id);
      if (held == nullptr || !(*held == owner))
        return Error::internal("runtime id " + id + " of pod " + uid + " is not indexed");
      return {};
    };
    VRI_TRY(check(pod.sandboxId, RuntimeOwner{uid, ""}));
    for (const auto& [name, c] : pod.containers) VRI_TRY(check(c.spec.id, RuntimeOwner{uid, name}));
  }
  if (runtime_ids != s.runtimeIds.size()) return Error::internal("the runtime-id index holds ids no record names");
  size_t records_with_cpus = 0;
  for (const auto& [uid, pod] : s.pods) {
    for (const auto& [name, c] : pod.containers) {
      if (c.exclusive.empty()) continue;
      ++records_with_cpus;
      const auto grant = s.grants().find(containerTenant(uid, name));
      if (grant == s.grants().end() || grant->second.cpus != c.exclusive) {
        return Error::internal("container " + name + " of pod " + uid + " disagrees with the pool");
      }
    }
  }
  for (const auto& [uuid, vm] : s.vms) {
    if (vm.placement.exclusive.empty() && vm.placement.heldBack.empty()) continue;
    ++records_with_cpus;
    const auto grant = s.grants().find(vmTenant(uuid));
    if (grant == s.grants().end() || grant->second.cpus != vm.placement.exclusive ||
        grant->second.heldBack != vm.placement.heldBack) {
      return Error::internal("VM " + uuid + " disagrees with the pool");
    }
  }
  size_t draining = 0;
  for (const auto& [owner, grant] : s.grants()) draining += isDrainingOwner(owner) ? 1 : 0;
  if (records_with_cpus + draining != s.grants().size())
    return Error::internal("the pool holds grants no tenant records");
  // NUMA memory: no node over-committed, and blocks as the records say.
  std::map<std::string, MemoryBlocks> recorded;
  for (const auto& [uid, pod] : s.pods) {
    for (const auto& [name, c] : pod.containers) {
      if (!c.memory.empty()) recorded[containerTenant(uid, name)] = c.memory;
    }
  }
  for (const auto& [uuid, vm] : s.vms) {
    if (vm.memory.empty()) continue;
    recorded[vmTenant(uuid)] = vm.memory;
    if (vm.placement.mems != NumaMemory::mems(vm.memory))
      return Error::internal("VM " + uuid + " mems disagree with its memory");
  }
  if (recorded != s.numa.blocks()) return Error::internal("NUMA memory blocks disagree with the tenants' records");
  std::map<std::pair<int, MemoryResource>, uint64_t> assigned;
  for (const auto& [owner, blocks] : recorded) {
    for (const auto& [node, resources] : blocks) {
      for (const auto& [resource, bytes] : resources) assigned[{node, resource}] += bytes;
    }
  }
  for (const auto& [key, bytes] : assigned) {
    const NumaMemoryCell& cell = s.numa.cell(key.first, key.second);
    if (bytes != cell.assigned || cell.assigned > cell.allocatable()) {
      return Error::internal("NUMA node " + std::to_string(key.first) + " " + memoryResourceName(key.second) +
                             " is over-committed or miscounted");
    }
  }
  return {};
}

}  // namespace vri
