#include "accounting/vm_cell_placement.h"

#include <algorithm>

namespace vri {

namespace {

// The memory of `cell` as a request: its parts, at their page sizes.
MemoryRequest cellMemory(const std::vector<VmMemoryPart>& parts, int cell) {
  MemoryRequest request;
  for (const VmMemoryPart& part : parts) {
    if (part.guestCell == cell) request[part.pageSize] += part.bytes;
  }
  return request;
}

// The part of the VM's CPU request that runs in `cell`: its online vCPUs, dedicated as the VM asks.
VmCpuRequest cellRequest(const VmCpuRequest& vm, const CpuSet& cellVcpus, const std::vector<int>& dedicated) {
  VmCpuRequest sub = vm;
  sub.onlineVcpus.clear();
  for (int vcpu : onlineVcpuIds(vm)) {
    if (cellVcpus.contains(vcpu)) sub.onlineVcpus.push_back(vcpu);
  }
  sub.vcpus = static_cast<int>(sub.onlineVcpus.size());
  sub.maxVcpus = vcpuIdCount(vm);
  sub.mixedDedicatedVcpus.clear();
  for (int vcpu : dedicated) {
    if (cellVcpus.contains(vcpu)) sub.mixedDedicatedVcpus.push_back(vcpu);
  }
  sub.cpuPolicy = sub.mixedDedicatedVcpus.empty() ? VmCpuPolicy::kShared : VmCpuPolicy::kMixed;
  sub.iothreads = 0;
  sub.iothreadIds.clear();
  sub.preferredNumaNodes.clear();
  return sub;
}

}  // namespace

bool placesCellByCell(const VmSpec& vm, const std::vector<int>& dedicatedVcpus) {
  if (vm.cells.size() < 2 || dedicatedVcpus.empty() || !vm.cpu.pinnedVcpuCpus.empty()) return false;
  if (vm.cpu.emulatorPolicy == HelperThreadPolicy::kIsolate) return false;
  if (vm.cpu.iothreadPolicy == HelperThreadPolicy::kIsolate && vm.cpu.iothreads > 0) return false;
  const std::vector<VmMemoryPart> parts = memoryPartsOf(vm);
  return std::all_of(parts.begin(), parts.end(),
                     [](const VmMemoryPart& p) { return p.hostNodes.empty() && p.guestCell != VmMemoryPart::kNoCell; });
}

std::optional<CellPlacement> placeCellsOnNodes(const Topology& topology, const CpuSet& free, const NumaMemory& numa,
                                               const VmSpec& vm, const std::vector<int>& dedicatedVcpus,
                                               const CpuTakeOptions& options) {
  const std::vector<VmMemoryPart> parts = memoryPartsOf(vm);
  CellPlacement out;
  for (int vcpu : onlineVcpuIds(vm.cpu)) out.cpus.vcpuCpus[vcpu] = VmCpuPlacement::kShared;
  for (IothreadId id : iothreadIdsOf(vm.cpu)) out.cpus.iothreadCpus[id] = VmCpuPlacement::kShared;
  CpuSet left = free;
  std::map<int, MemoryRequest> taken;  // node -> what earlier cells took there
  for (const GuestCell& cell : vm.cells) {
    const VmCpuRequest sub = cellRequest(vm.cpu, cell.vcpus, dedicatedVcpus);
    const MemoryRequest memory = cellMemory(parts, cell.id);
    // The nodes with the most CPUs free first: the cell lands where it fits best.
    std::vector<const NumaNode*> nodes;
    for (const NumaNode& node : topology.numaNodes()) nodes.push_back(&node);
    std::stable_sort(nodes.begin(), nodes.end(), [&](const NumaNode* a, const NumaNode* b) {
      return (left & a->cpus).count() > (left & b->cpus).count();
    });
    bool placed = false;
    for (const NumaNode* node : nodes) {
      const bool memory_fits = std::all_of(memory.begin(), memory.end(), [&](const auto& need) {
        return numa.freeOn({node->id}, need.first) >= taken[node->id][need.first] + need.second;
      });
      if (!memory_fits) continue;
      VmCpuPlacement cpus;
      if (sub.vcpus > 0) {
        auto planned = planVmCpus(topology, left & node->cpus, sub, options);
        if (!planned.ok()) continue;
        cpus = *planned;
      }
      for (const auto& [vcpu, cpu] : cpus.vcpuCpus) out.cpus.vcpuCpus[vcpu] = cpu;
      out.cpus.exclusive |= cpus.exclusive;
      out.cpus.heldBack |= cpus.heldBack;
      left -= cpus.exclusive | cpus.heldBack;
      for (const auto& [resource, bytes] : memory) taken[node->id][resource] += bytes;
      out.nodeOfCell[cell.id] = node->id;
      placed = true;
      break;
    }
    if (!placed) return std::nullopt;
  }
  return out;
}

}  // namespace vri
