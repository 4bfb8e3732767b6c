// Node capacity and allocatable, as kubelet computes them.
#pragma once

#include <cstdint>

#include "accounting/topology.h"
#include "base/quantity.h"
#include "base/result.h"

namespace vri {

struct NodeReservations {
  Quantity systemReservedCpu, kubeReservedCpu;
  Quantity systemReservedMemory, kubeReservedMemory;
  Quantity evictionHardMemory;  // kubelet's memory.available hard eviction threshold
};

struct NodeAllocatable {
  int64_t capacityCpuMilli = 0;
  int64_t allocatableCpuMilli = 0;  // capacity - system-reserved - kube-reserved
  uint64_t capacityMemoryBytes = 0;
  uint64_t allocatableMemoryBytes = 0;  // capacity - system-reserved - kube-reserved - eviction-hard
  // kubelet's static policy reserves ceil(system-reserved + kube-reserved CPU) whole CPUs.
  int reservedCpuCount = 0;
};

// Refuses reservations that leave nothing allocatable.
Result<NodeAllocatable> computeAllocatable(const Topology& topology, const NodeReservations& reservations);

}  // namespace vri
