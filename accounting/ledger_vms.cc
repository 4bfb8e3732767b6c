// The ledger's decisions about VMs.
#include <algorithm>

#include "accounting/ledger.h"
#include "cgroup-model/quote.h"
#include "cgroup-model/uuid.h"

namespace vri {

namespace {

bool sameVm(const VmSpec& a, const VmSpec& b) {
  const VmCpuRequest& x = a.cpu;
  const VmCpuRequest& y = b.cpu;
  return a.memoryBytes == b.memoryBytes && x.vcpus == y.vcpus && onlineVcpuIds(x) == onlineVcpuIds(y) &&
         vcpuIdCount(x) == vcpuIdCount(y) && iothreadIdsOf(x) == iothreadIdsOf(y) && x.cpuPolicy == y.cpuPolicy &&
         x.mixedDedicatedVcpus == y.mixedDedicatedVcpus && x.guestThreadsPerCore == y.guestThreadsPerCore &&
         x.threadPolicy == y.threadPolicy && x.emulatorPolicy == y.emulatorPolicy && x.iothreads == y.iothreads &&
         x.iothreadPolicy == y.iothreadPolicy && x.preferredNumaNodes == y.preferredNumaNodes &&
         x.pinnedVcpuCpus == y.pinnedVcpuCpus;
}

Result<void> validateVmUuid(const std::string& uuid) {
  if (!isUuid(uuid)) return Error::invalidArgument("invalid VM UUID " + quoteForMessage(uuid));
  return {};
}

std::string vmName(const VmSpec& vm) { return "VM " + (vm.cpu.name.empty() ? vm.uuid : vm.cpu.name); }

// The shared pool may shrink only down to what the shared tenants, this VM's own shared vCPUs included, need.
void reserveSharedFor(CpuPool& pool, const LedgerTotals& totals, int64_t more) {
  if (more > 0) pool.followSharedDemand(static_cast<int>((totals.sharedDemandMilli + more + 999) / 1000));
}

std::vector<int> nodesOf(const Topology& topology, const CpuSet& cpus) {
  std::vector<int> nodes;
  for (int cpu : cpus) {
    const int node = topology.cpu(cpu)->numaNode;
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  return nodes;
}

}  // namespace

Result<Decision<VmCpuPlacement>> Ledger::decideAdmitVm(const StatePtr& from, const VmSpec& vm) const {
  return decideVm(from, vm, false);
}

Result<Decision<VmCpuPlacement>> Ledger::decideReserveVm(const StatePtr& from, const VmSpec& vm) const {
  return decideVm(from, vm, true);
}

Result<Decision<VmCpuPlacement>> Ledger::decideVm(const StatePtr& from, const VmSpec& vm, bool defined) const {
  VRI_TRY(validateVmUuid(vm.uuid));
  const std::string who = vmName(vm);
  NextState n = next(from);
  if (const VmRecord* existing = from->vm(vm.uuid)) {
    if (!sameVm(existing->spec, vm)) {
      return Error::failedPrecondition(who + " is admitted with another CPU or memory request; release it first");
    }
    if (!existing->defined || defined) return unchanged(from, existing->placement);
    VmRecord started = *existing;  // the reserved VM starts
    started.defined = false;
    const VmCpuPlacement placement = started.placement;
    n.putVm(std::move(started));
    return n.finish(placement);
  }
  VRI_TRY(checkMemory(*from, vmMemory(vm), who));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t shared_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * config_.sharedVcpuMilli;
  VRI_TRY(checkSharedDemand(*from, shared_demand, who));
  reserveSharedFor(n.pool(), from->totals, shared_demand);
  // A VM with dedicated CPUs, hugepages or a strict numatune is NUMA-bound: its
  // CPUs and memory come from the same nodes.
  const std::string owner = vmTenant(vm.uuid);
  const bool numa_bound = !dedicated.empty() || vm.hugepageSize != 0 || !vm.strictNumaNodes.empty();
  const MemoryRequest memory_request = {{vm.hugepageSize, vm.memoryBytes}};
  VmCpuRequest cpu_request = vm.cpu;
  std::vector<int> nodes;
  if (numa_bound && !vm.cpu.pinnedVcpuCpus.empty()) {
    // The user chose the CPUs; memory follows them to their NUMA nodes.
    CpuSet pinned;
    for (int cpu : vm.cpu.pinnedVcpuCpus) {
      if (cpu != VmCpuPlacement::kShared && topology_->cpu(cpu) != nullptr) pinned.add(cpu);
    }
    nodes = nodesOf(*topology_, pinned);
    std::sort(nodes.begin(), nodes.end());
    if (!vm.strictNumaNodes.empty()) nodes = vm.strictNumaNodes;
  } else if (numa_bound) {
    int exclusive_cpus = 0;
    if (auto dry = planVmCpus(*topology_, from->pool.freeForExclusive(), vm.cpu, config_.pool.take); dry.ok()) {
      exclusive_cpus = (dry->exclusive | dry->heldBack).count();
    }
    VRI_ASSIGN_OR_RETURN(nodes, alignNodes(*from, {who, exclusive_cpus, memory_request}, vm.strictNumaNodes));
    if (cpu_request.preferredNumaNodes.empty()) cpu_request.preferredNumaNodes = nodes;
  }
  auto placement = n.pool().allocateVm(owner, cpu_request);
  if (!placement.ok()) {
    return Error(placement.error().code(), placement.error().message() + "; " +
                                               std::to_string(from->totals.sharedTenants) + " shared tenants request " +
                                               std::to_string(from->totals.sharedDemandMilli) + "m");
  }
  MemoryBlocks blocks;
  if (numa_bound && vm.memoryBytes > 0) {
    auto taken = n.numa().allocate(owner, nodes, memory_request);
    if (!taken.ok()) return std::move(taken).context(who).error();
    blocks = *taken;
    placement->mems = NumaMemory::mems(blocks);
  }
  const VmCpuPlacement answer = *placement;
  n.putVm(VmRecord{vm, *placement, blocks, defined});
  return n.finish(answer);
}

Result<Decision<VmCpuPlacement>> Ledger::decideResizeVm(const StatePtr& from, const VmSpec& vm) const {
  const VmRecord* known = from->vm(vm.uuid);
  if (known == nullptr) return Error::notFound("no VM " + quoteForMessage(vm.uuid));
  if (sameVm(known->spec, vm)) return unchanged(from, known->placement);
  const std::string who = vmName(vm);
  const VmRecord& before = *known;
  if (!before.memory.empty() &&
      (vm.memoryBytes != before.spec.memoryBytes || vm.hugepageSize != before.spec.hugepageSize ||
       vm.strictNumaNodes != before.spec.strictNumaNodes)) {
    return Error::failedPrecondition(who +
                                     " has NUMA-bound memory; release it and admit it again to change its memory");
  }
  const uint64_t memory_before = vmMemory(before.spec), memory_after = vmMemory(vm);
  if (memory_after > memory_before) VRI_TRY(checkMemory(*from, memory_after - memory_before, who));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t new_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * config_.sharedVcpuMilli;

  // Out of the books, placed anew inside its old CPUs first, then nearby.
  NextState n = next(from);
  const std::string owner = vmTenant(vm.uuid);
  const CpuSet old_cpus = before.placement.exclusive | before.placement.heldBack;
  n.pool().releaseOwner(owner);
  VmRecord without = before;
  without.placement.vcpuCpus.clear();  // no shared demand while it is placed anew
  n.putVm(without);
  VRI_TRY(checkSharedDemand(n.now(), new_demand, who));
  reserveSharedFor(n.pool(), n.now().totals, new_demand);
  auto placement = planVmCpus(*topology_, old_cpus, vm.cpu, config_.pool.take);
  if (!placement.ok()) {
    VmCpuRequest nearby = vm.cpu;
    if (nearby.preferredNumaNodes.empty()) nearby.preferredNumaNodes = nodesOf(*topology_, old_cpus);
    placement = planVmCpus(*topology_, n.pool().freeForExclusive(), nearby, config_.pool.take);
  }
  if (placement.ok() && !(placement->exclusive | placement->heldBack).empty()) {
    auto assigned = n.pool().assign(owner, {placement->exclusive, placement->heldBack});
    if (!assigned.ok()) placement = std::move(assigned).error();
  }
  if (!placement.ok()) return std::move(placement).context(who).error();
  placement->mems = before.placement.mems;  // the memory stays where it is
  const VmCpuPlacement answer = *placement;
  n.putVm(VmRecord{vm, *placement, before.memory, before.defined});
  return n.finish(answer);
}

Result<Decision<bool>> Ledger::decideReleaseVm(const StatePtr& from, const std::string& uuid) const {
  const VmRecord* vm = from->vm(uuid);
  if (vm == nullptr) return Error::notFound("no VM " + quoteForMessage(uuid));
  NextState n = next(from);
  n.pool().releaseOwner(vmTenant(uuid));
  if (!vm->memory.empty()) VRI_TRY(n.numa().release(vmTenant(uuid)));
  n.eraseVm(uuid);
  return n.finish(true);
}

Result<Decision<bool>> Ledger::decideAdoptVm(const StatePtr& from, const VmSpec& vm,
                                             const VmCpuPlacement& placement) const {
  VRI_TRY(validateVmUuid(vm.uuid));
  if (from->vm(vm.uuid)) return Error(ErrorCode::kAlreadyExists, "VM " + vm.uuid + " is known");
  NextState n = next(from);
  const ExclusiveGrant grant{placement.exclusive, placement.heldBack};
  if (!grant.all().empty()) VRI_TRY(n.pool().assign(vmTenant(vm.uuid), grant));
  n.putVm(VmRecord{vm, placement, {}, false});
  return n.finish(true);
}

}  // namespace vri
