#include "accounting/node_allocatable.h"

#include <string>

namespace vri {

Result<NodeAllocatable> computeAllocatable(const Topology& topology, const NodeReservations& r) {
  NodeAllocatable node;
  node.capacityCpuMilli = static_cast<int64_t>(topology.onlineCpus().count()) * 1000;
  node.capacityMemoryBytes = topology.totalMemoryBytes();
  const int64_t reserved_cpu = r.systemReservedCpu.milliValue() + r.kubeReservedCpu.milliValue();
  const uint64_t reserved_memory = static_cast<uint64_t>(r.systemReservedMemory.value()) +
                                   static_cast<uint64_t>(r.kubeReservedMemory.value()) +
                                   static_cast<uint64_t>(r.evictionHardMemory.value());
  if (reserved_cpu >= node.capacityCpuMilli) {
    return Error::invalidArgument("system-reserved and kube-reserved CPU (" + std::to_string(reserved_cpu) +
                                  "m) leave nothing of the node's " + std::to_string(node.capacityCpuMilli) + "m");
  }
  if (reserved_memory >= node.capacityMemoryBytes) {
    return Error::invalidArgument("reserved memory and the eviction threshold (" +
                                  std::to_string(reserved_memory >> 20) + " MiB) leave nothing of the node's " +
                                  std::to_string(node.capacityMemoryBytes >> 20) + " MiB");
  }
  node.allocatableCpuMilli = node.capacityCpuMilli - reserved_cpu;
  node.allocatableMemoryBytes = node.capacityMemoryBytes - reserved_memory;
  node.reservedCpuCount = static_cast<int>((reserved_cpu + 999) / 1000);
  return node;
}

}  // namespace vri
