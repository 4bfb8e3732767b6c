// What the node has and who holds it, resource by resource, as an operator
// reads kubelet's books: capacity, reserved, allocatable, admitted by pods and
// by VMs, and free.
#pragma once

#include <cstdint>
#include <vector>

#include "accounting/ledger_state.h"
#include "accounting/node_allocatable.h"

namespace vri {

struct ResourceBooks {
  uint64_t capacity = 0;
  uint64_t reserved = 0;
  uint64_t pods = 0;
  uint64_t vms = 0;
  uint64_t allocatable() const { return capacity > reserved ? capacity - reserved : 0; }
  uint64_t free() const { return allocatable() > pods + vms ? allocatable() - pods - vms : 0; }
};

struct MemoryBooks {
  static constexpr int kWholeNode = -1;
  int numaNode = kWholeNode;
  MemoryResource resource = kRegularMemory;
  ResourceBooks books;
};

struct CapacityBooks {
  ResourceBooks cpuMilli;
  // The whole node's regular memory, then per NUMA node each resource it has
  // (only NUMA-bound tenants take from one NUMA node's books).
  std::vector<MemoryBooks> memory;
};

struct CapacityInputs {
  const NodeAllocatable& allocatable;
  int64_t sharedVcpuMilli = 1000;
  uint64_t vmMemoryOverheadBytes = 0;
};

// A walk over every tenant: for views, never for decisions.
CapacityBooks capacityBooks(const LedgerState& state, const CapacityInputs& inputs);

}  // namespace vri
