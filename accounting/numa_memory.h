// Memory per NUMA node and per resource — regular memory and each hugepage
// size — kept as kubelet's memory manager keeps it, for pods and VMs alike:
// total, reserved, allocatable = total - reserved, assigned, free.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// A resource: 0 for regular memory, otherwise a hugepage size in bytes.
using MemoryResource = uint64_t;
constexpr MemoryResource kRegularMemory = 0;
std::string memoryResourceName(MemoryResource resource);  // "memory", "hugepages-2Mi", "hugepages-1Gi"

struct NumaMemoryCell {
  uint64_t total = 0;
  uint64_t reserved = 0;
  uint64_t assigned = 0;
  uint64_t allocatable() const { return total > reserved ? total - reserved : 0; }
  uint64_t free() const { return allocatable() > assigned ? allocatable() - assigned : 0; }
};

// How much of each resource a tenant needs.
using MemoryRequest = std::map<MemoryResource, uint64_t>;

// Where a tenant's memory lies: node -> resource -> bytes.
using MemoryBlocks = std::map<int, std::map<MemoryResource, uint64_t>>;

class NumaMemory {
 public:
  // `reservedPerNode` (node -> bytes of regular memory) must add up to
  // `reservedTotal`, the node-level reservation kubelet subtracts; it is
  // refused otherwise, as kubelet refuses an inconsistent --reserved-memory.
  static Result<NumaMemory> create(const Topology& topology, const std::map<int, uint64_t>& reservedPerNode,
                                   uint64_t reservedTotal);

  const NumaMemoryCell& cell(int node, MemoryResource resource) const;
  std::vector<int> nodes() const;
  // The resources `node` has (regular memory first, then hugepage sizes ascending).
  std::vector<MemoryResource> resources(int node) const;
  // Free bytes of `resource` over `nodes`.
  uint64_t freeOn(const std::vector<int>& nodes, MemoryResource resource) const;
  uint64_t allocatableOn(const std::vector<int>& nodes, MemoryResource resource) const;

  // Takes `request` from `nodes` (filling them in order) for `owner`; refuses,
  // changing nothing, when they cannot hold it, naming the resource and the numbers.
  Result<MemoryBlocks> allocate(const std::string& owner, const std::vector<int>& nodes, const MemoryRequest& request);
  // Several requests for one owner, each from its own nodes (a VM's guest NUMA
  // cells, each bound where the domain says): all of them or none. Every node
  // named appears in the blocks (with 0 bytes if nothing was taken there), so
  // cpuset.mems covers the nodes the memory is bound to.
  struct Part {
    std::vector<int> nodes;
    MemoryRequest request;
    std::string what;  // for messages, before the node list ("its numatune nodes"); empty: name the owner
  };
  Result<MemoryBlocks> allocateParts(const std::string& owner, const std::vector<Part>& parts);
  Result<void> release(const std::string& owner);
  // Records blocks chosen before (a restored ledger); refuses what no longer fits.
  Result<void> restore(const std::string& owner, const MemoryBlocks& blocks);
  const std::map<std::string, MemoryBlocks>& blocks() const { return blocks_; }
  // Who holds `resource` on `nodes` now, for a refusal: "VMs hold 96 MiB and pods 32 MiB of the 256 MiB there".
  std::string holdersOn(const std::vector<int>& nodes, MemoryResource resource) const {
    return holders(cells_, nodes, resource);
  }

  // cpuset.mems for a tenant's blocks.
  static CpuSet mems(const MemoryBlocks& blocks);

 private:
  using Cells = std::map<int, std::map<MemoryResource, NumaMemoryCell>>;
  // Who holds `resource` on `nodes`, for a refusal: "VMs hold 96 MiB and pods 32 MiB of the 256 MiB there".
  std::string holders(const Cells& cells, const std::vector<int>& nodes, MemoryResource resource) const;

  Cells cells_;
  std::map<std::string, MemoryBlocks> blocks_;
};

}  // namespace vri
