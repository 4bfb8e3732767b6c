#include "accounting/capacity_books.h"

#include <algorithm>

#include "accounting/tenant_id.h"

namespace vri {

namespace {

uint64_t nonNegative(int64_t value) { return value > 0 ? static_cast<uint64_t>(value) : 0; }

// A VM's CPUs: its exclusive CPUs whole, and what its shared vCPUs ask of the shared pool.
uint64_t vmCpuMilli(const VmRecord& vm, int64_t sharedVcpuMilli) {
  const LedgerTotals t = vmTotals(vm, true, sharedVcpuMilli, 0);
  return nonNegative(t.sharedDemandMilli) + static_cast<uint64_t>(vm.placement.exclusive.count()) * 1000;
}

// A pod's CPUs: what its containers request, and its overhead (a pod outside kubelet's tree too).
uint64_t podCpuMilli(const PodRecord& pod) {
  int64_t milli = pod.spec.overheadCpuMilli;
  for (const auto& [name, c] : pod.containers) milli += c.spec.cpuRequestMilli;
  return nonNegative(milli);
}

}  // namespace

CapacityBooks capacityBooks(const LedgerState& state, const CapacityInputs& in) {
  CapacityBooks out;
  out.cpuMilli.capacity = nonNegative(in.allocatable.capacityCpuMilli);
  out.cpuMilli.reserved = nonNegative(in.allocatable.capacityCpuMilli - in.allocatable.allocatableCpuMilli);
  MemoryBooks node;
  node.books.capacity = in.allocatable.capacityMemoryBytes;
  node.books.reserved = in.allocatable.capacityMemoryBytes -
                        std::min(in.allocatable.capacityMemoryBytes, in.allocatable.allocatableMemoryBytes);
  for (const auto& [uid, pod] : state.pods) {
    out.cpuMilli.pods += podCpuMilli(pod);
    node.books.pods += podMemoryBytes(pod);
  }
  for (const auto& [uuid, vm] : state.vms) {
    out.cpuMilli.vms += vmCpuMilli(vm, in.sharedVcpuMilli);
    node.books.vms += vmTotals(vm, true, in.sharedVcpuMilli, in.vmMemoryOverheadBytes).admittedMemoryBytes;
  }
  out.memory.push_back(node);

  for (int id : state.numa.nodes()) {
    for (MemoryResource resource : state.numa.resources(id)) {
      const NumaMemoryCell& cell = state.numa.cell(id, resource);
      MemoryBooks row{id, resource, {cell.total, cell.reserved, 0, 0}};
      for (const auto& [owner, blocks] : state.numa.blocks()) {
        const auto on_node = blocks.find(id);
        if (on_node == blocks.end()) continue;
        const auto bytes = on_node->second.find(resource);
        if (bytes == on_node->second.end()) continue;
        (parseTenant(owner).kind == TenantName::Kind::kVm ? row.books.vms : row.books.pods) += bytes->second;
      }
      out.memory.push_back(row);
    }
  }
  return out;
}

}  // namespace vri
