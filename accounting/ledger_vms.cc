// The ledger's decisions about VMs.
#include <algorithm>

#include "accounting/ledger.h"
#include "accounting/spec_amounts.h"
#include "accounting/vm_cell_placement.h"
#include "base/quote.h"
#include "base/uuid.h"

namespace vri {

namespace {

// The same memory: the same parts, where a part VRI placed may now come bound
// to exactly the nodes VRI chose for it (the <numatune> VRI wrote back: a
// cell's <memnode>, or the whole VM's nodeset).
bool sameMemory(const VmRecord& known, const VmSpec& b) {
  const std::vector<VmMemoryPart> x = memoryPartsOf(known.spec), y = memoryPartsOf(b);
  if (x.size() != y.size() || known.spec.cells != b.cells) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i]) continue;
    VmMemoryPart chosen = x[i];
    if (!chosen.hostNodes.empty()) return false;
    const auto placed = known.placement.cellNodes.find(chosen.guestCell);
    const CpuSet nodes = placed != known.placement.cellNodes.end() ? placed->second : known.placement.mems;
    chosen.hostNodes.assign(nodes.begin(), nodes.end());
    if (chosen != y[i]) return false;
  }
  return true;
}

bool sameVm(const VmRecord& known, const VmSpec& b) {
  const VmSpec& a = known.spec;
  const VmCpuRequest& x = a.cpu;
  const VmCpuRequest& y = b.cpu;
  return a.memoryBytes == b.memoryBytes && sameMemory(known, b) && x.vcpus == y.vcpus &&
         onlineVcpuIds(x) == onlineVcpuIds(y) && vcpuIdCount(x) == vcpuIdCount(y) &&
         iothreadIdsOf(x) == iothreadIdsOf(y) && x.cpuPolicy == y.cpuPolicy &&
         x.mixedDedicatedVcpus == y.mixedDedicatedVcpus && x.guestThreadsPerCore == y.guestThreadsPerCore &&
         x.threadPolicy == y.threadPolicy && x.emulatorPolicy == y.emulatorPolicy && x.iothreads == y.iothreads &&
         x.iothreadPolicy == y.iothreadPolicy && x.preferredNumaNodes == y.preferredNumaNodes &&
         x.pinnedVcpuCpus == y.pinnedVcpuCpus;
}

Result<void> validateVmUuid(const std::string& uuid) {
  if (!isUuid(uuid)) return Error::invalidArgument("invalid VM UUID " + quoteForMessage(uuid));
  return {};
}

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

Result<void> Ledger::checkVmNodesExist(const VmSpec& vm) const {
  const auto check = [&](std::string_view field, int node) -> Result<void> {
    if (topology_->numaNode(node) != nullptr) return {};
    std::string nodes;
    for (const NumaNode& n : topology_->numaNodes()) nodes += (nodes.empty() ? "" : ",") + std::to_string(n.id);
    return Error::invalidArgument(std::string(field) + ": this host has no NUMA node " + std::to_string(node) +
                                  " (it has " + nodes + ")");
  };
  for (int node : vm.strictNumaNodes) VRI_TRY(check("strict_numa_nodes", node));
  for (const VmMemoryPart& part : vm.memoryParts) {
    for (int node : part.hostNodes) VRI_TRY(check("memory_parts.host_nodes", node));
  }
  return {};
}

Result<Decision<VmCpuPlacement>> Ledger::decideVm(const StatePtr& from, const VmSpec& vm, bool defined) const {
  VRI_TRY(validateVmUuid(vm.uuid));
  VRI_TRY(checkVmAmounts(vm));
  VRI_TRY(checkVmNodesExist(vm));
  const std::string who = vmDisplayName(vm);
  NextState n = next(from);
  if (const VmRecord* existing = from->vm(vm.uuid)) {
    if (!sameVm(*existing, vm)) {
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
  VRI_TRY(validateMemoryParts(vm));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t shared_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * policy().sharedVcpuMilli;
  VRI_TRY(checkSharedDemand(*from, shared_demand, who));
  reserveSharedFor(n.pool(), from->totals, shared_demand);
  // A VM with dedicated CPUs, hugepages or memory the domain binds is
  // NUMA-bound: its CPUs and memory come from the same nodes.
  const std::string owner = vmTenant(vm.uuid);
  const std::vector<VmMemoryPart> parts = memoryPartsOf(vm);
  MemoryRequest chosen_memory;   // what VRI finds nodes for
  std::vector<int> bound_nodes;  // what the domain names
  bool hugepages = false;
  for (const VmMemoryPart& part : parts) {
    hugepages |= part.pageSize != 0;
    if (part.hostNodes.empty()) chosen_memory[part.pageSize] += part.bytes;
    for (int node : part.hostNodes) {
      if (std::find(bound_nodes.begin(), bound_nodes.end(), node) == bound_nodes.end()) bound_nodes.push_back(node);
    }
  }
  std::sort(bound_nodes.begin(), bound_nodes.end());
  const bool numa_bound = !dedicated.empty() || hugepages || !bound_nodes.empty();
  VmCpuRequest cpu_request = vm.cpu;
  std::vector<int> nodes;  // where the memory VRI places goes
  std::optional<CellPlacement> cells;
  if (numa_bound && !vm.cpu.pinnedVcpuCpus.empty()) {
    // The user chose the CPUs; memory follows them to their NUMA nodes.
    CpuSet pinned;
    for (int cpu : vm.cpu.pinnedVcpuCpus) {
      if (cpu != VmCpuPlacement::kShared && topology_->cpu(cpu) != nullptr) pinned.add(cpu);
    }
    nodes = nodesOf(*topology_, pinned);
    std::sort(nodes.begin(), nodes.end());
  } else if (numa_bound) {
    if (vm.alignCells && placesCellByCell(vm, dedicated)) {
      cells =
          placeCellsOnNodes(*topology_, from->pool.freeForExclusive(), from->numa, vm, dedicated, policy().pool.take);
    }
    if (!cells && (!chosen_memory.empty() || bound_nodes.empty())) {
      int exclusive_cpus = 0;
      if (auto dry = planVmCpus(*topology_, from->pool.freeForExclusive(), vm.cpu, policy().pool.take); dry.ok()) {
        exclusive_cpus = (dry->exclusive | dry->heldBack).count();
      }
      VRI_ASSIGN_OR_RETURN(nodes, alignNodes(*from, {who, exclusive_cpus, chosen_memory}, {}));
    } else if (!cells) {
      nodes = bound_nodes;
    }
    if (cpu_request.preferredNumaNodes.empty()) cpu_request.preferredNumaNodes = nodes;
  }
  Result<VmCpuPlacement> placement = Error::internal("not placed");
  if (cells) {
    placement = cells->cpus;
    const ExclusiveGrant grant{cells->cpus.exclusive, cells->cpus.heldBack};
    if (!grant.all().empty()) {
      if (auto assigned = n.pool().assign(owner, grant); !assigned.ok()) placement = assigned.error();
    }
  } else {
    placement = n.pool().allocateVm(owner, cpu_request);
  }
  if (!placement.ok()) {
    return Error(placement.error().code(), placement.error().message() + "; " +
                                               std::to_string(from->totals.sharedTenants) + " shared tenants request " +
                                               std::to_string(from->totals.sharedDemandMilli) + "m");
  }
  MemoryBlocks blocks;
  std::map<int, CpuSet> cell_nodes;
  if (numa_bound && vm.memoryBytes > 0) {
    std::vector<NumaMemory::Part> numa_parts;
    for (const VmMemoryPart& part : parts) {
      NumaMemory::Part p{part.hostNodes, {{part.pageSize, part.bytes}}, ""};
      const std::string cell =
          part.guestCell == VmMemoryPart::kNoCell ? "" : "guest cell " + std::to_string(part.guestCell) + "'s ";
      if (!part.hostNodes.empty()) p.what = cell.empty() ? "its numatune nodes" : cell + "<memnode> nodes";
      if (p.nodes.empty()) p.nodes = cells ? std::vector<int>{cells->nodeOfCell.at(part.guestCell)} : nodes;
      // A cell's <memnode> is where its own memory is: a memory device's nodemask is the device's alone.
      if (part.guestCell != VmMemoryPart::kNoCell && !part.device && (cells || !part.hostNodes.empty())) {
        for (int node : p.nodes) cell_nodes[part.guestCell].add(node);
      }
      numa_parts.push_back(std::move(p));
    }
    auto taken = n.numa().allocateParts(owner, numa_parts);
    if (!taken.ok()) return std::move(taken).context(who).error();
    blocks = *taken;
    placement->mems = NumaMemory::mems(blocks);
  }
  placement->cellNodes = cell_nodes;
  const VmCpuPlacement answer = *placement;
  VmRecord record{vm, *placement, blocks, defined};
  n.putVm(std::move(record));
  return n.finish(answer);
}

Result<Decision<VmCpuPlacement>> Ledger::decideResizeVm(const StatePtr& from, const VmSpec& vm) const {
  VRI_TRY(checkVmAmounts(vm));
  VRI_TRY(validateMemoryParts(vm));
  VRI_TRY(checkVmNodesExist(vm));
  const VmRecord* known = from->vm(vm.uuid);
  if (known == nullptr) return Error::notFound("no VM " + quoteForMessage(vm.uuid));
  if (sameVm(*known, vm)) return unchanged(from, known->placement);
  const std::string who = vmDisplayName(vm);
  const VmRecord& before = *known;
  if (!before.memory.empty() && (vm.memoryBytes != before.spec.memoryBytes || !sameMemory(before, vm))) {
    return Error::failedPrecondition(who +
                                     " has NUMA-bound memory; release it and admit it again to change its memory");
  }
  const uint64_t memory_before = vmMemory(before.spec), memory_after = vmMemory(vm);
  if (memory_after > memory_before) VRI_TRY(checkMemory(*from, memory_after - memory_before, who));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t new_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * policy().sharedVcpuMilli;

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
  auto placement = planVmCpus(*topology_, old_cpus, vm.cpu, policy().pool.take);
  if (!placement.ok()) {
    VmCpuRequest nearby = vm.cpu;
    if (nearby.preferredNumaNodes.empty()) nearby.preferredNumaNodes = nodesOf(*topology_, old_cpus);
    placement = planVmCpus(*topology_, n.pool().freeForExclusive(), nearby, policy().pool.take);
  }
  if (placement.ok() && !(placement->exclusive | placement->heldBack).empty()) {
    auto assigned = n.pool().assign(owner, {placement->exclusive, placement->heldBack});
    if (!assigned.ok()) placement = std::move(assigned).error();
  }
  if (!placement.ok()) return std::move(placement).context(who).error();
  placement->mems = before.placement.mems;  // the memory stays where it is
  const VmCpuPlacement answer = *placement;
  placement->cellNodes = before.placement.cellNodes;
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
  VRI_TRY(checkVmAmounts(vm));
  if (from->vm(vm.uuid)) return Error(ErrorCode::kAlreadyExists, "VM " + vm.uuid + " is known");
  NextState n = next(from);
  const ExclusiveGrant grant{placement.exclusive, placement.heldBack};
  if (!grant.all().empty()) VRI_TRY(n.pool().assign(vmTenant(vm.uuid), grant));
  n.putVm(VmRecord{vm, placement, {}, false});
  return n.finish(true);
}

}  // namespace vri
