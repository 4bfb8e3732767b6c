#include "accounting/numa_memory.h"

#include "accounting/tenant_id.h"
#include "base/quote.h"

namespace vri {

namespace {

std::string mebibytes(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string NumaMemory::holders(const Cells& cells, const std::vector<int>& nodes, MemoryResource resource) const {
  uint64_t vms = 0, pods = 0, allocatable = 0;
  for (int node : nodes) {
    const auto on_node = cells.find(node);
    if (on_node != cells.end()) {
      const auto cell = on_node->second.find(resource);
      if (cell != on_node->second.end()) allocatable += cell->second.allocatable();
    }
    for (const auto& [owner, blocks] : blocks_) {
      const auto held = blocks.find(node);
      if (held == blocks.end()) continue;
      const auto bytes = held->second.find(resource);
      if (bytes == held->second.end()) continue;
      (parseTenant(owner).kind == TenantName::Kind::kVm ? vms : pods) += bytes->second;
    }
  }
  return "VMs hold " + mebibytes(vms) + " and pods " + mebibytes(pods) + " of the " + mebibytes(allocatable) + " there";
}

std::string memoryResourceName(MemoryResource resource) {
  if (resource == kRegularMemory) return "memory";
  if (resource % (1ULL << 30) == 0) return "hugepages-" + std::to_string(resource >> 30) + "Gi";
  if (resource % (1ULL << 20) == 0) return "hugepages-" + std::to_string(resource >> 20) + "Mi";
  return "hugepages-" + std::to_string(resource >> 10) + "Ki";
}

Result<NumaMemory> NumaMemory::create(const Topology& topology, const std::map<int, uint64_t>& reservedPerNode,
                                      uint64_t reservedTotal) {
  NumaMemory memory;
  uint64_t reserved_sum = 0;
  for (const auto& [node, bytes] : reservedPerNode) {
    if (topology.numaNode(node) == nullptr) {
      return Error::invalidArgument("reserved memory names NUMA node " + std::to_string(node) +
                                    ", which does not exist");
    }
    reserved_sum += bytes;
  }
  if (reserved_sum != reservedTotal) {
    return Error::invalidArgument("reserved memory per NUMA node adds up to " + mebibytes(reserved_sum) +
                                  ", not the node-level reservation of " + mebibytes(reservedTotal));
  }
  for (const NumaNode& node : topology.numaNodes()) {
    uint64_t hugepage_bytes = 0;
    for (const auto& [size, count] : node.hugepages) {
      memory.cells_[node.id][size].total = size * count;
      hugepage_bytes += size * count;
    }
    // Hugepages are carved out of the node's memory; regular memory is the rest.
    NumaMemoryCell& regular = memory.cells_[node.id][kRegularMemory];
    regular.total = node.memoryBytes > hugepage_bytes ? node.memoryBytes - hugepage_bytes : 0;
    const auto reserved = reservedPerNode.find(node.id);
    regular.reserved = reserved == reservedPerNode.end() ? 0 : reserved->second;
    if (regular.reserved > regular.total) {
      return Error::invalidArgument("NUMA node " + std::to_string(node.id) + " reserves " +
                                    mebibytes(regular.reserved) + " of " + mebibytes(regular.total));
    }
  }
  return memory;
}

const NumaMemoryCell& NumaMemory::cell(int node, MemoryResource resource) const {
  static const NumaMemoryCell kNone;  // a node without that resource; immutable
  const auto n = cells_.find(node);
  if (n == cells_.end()) return kNone;
  const auto r = n->second.find(resource);
  return r == n->second.end() ? kNone : r->second;
}

std::vector<int> NumaMemory::nodes() const {
  std::vector<int> ids;
  for (const auto& [node, cells] : cells_) ids.push_back(node);
  return ids;
}

std::vector<MemoryResource> NumaMemory::resources(int node) const {
  std::vector<MemoryResource> out;
  const auto n = cells_.find(node);
  if (n == cells_.end()) return out;
  for (const auto& [resource, cell] : n->second) out.push_back(resource);
  return out;
}

uint64_t NumaMemory::freeOn(const std::vector<int>& nodes, MemoryResource resource) const {
  uint64_t total = 0;
  for (int node : nodes) total += cell(node, resource).free();
  return total;
}

uint64_t NumaMemory::allocatableOn(const std::vector<int>& nodes, MemoryResource resource) const {
  uint64_t total = 0;
  for (int node : nodes) total += cell(node, resource).allocatable();
  return total;
}

Result<MemoryBlocks> NumaMemory::allocate(const std::string& owner, const std::vector<int>& nodes,
                                          const MemoryRequest& request) {
  if (blocks_.count(owner)) return Error(ErrorCode::kAlreadyExists, quoteForMessage(owner) + " already holds memory");
  for (const auto& [resource, bytes] : request) {
    const uint64_t free = freeOn(nodes, resource);
    if (free < bytes) {
      std::string where;
      for (int node : nodes) where += (where.empty() ? "" : ",") + std::to_string(node);
      return Error::resourceExhausted(quoteForMessage(owner) + " needs " + mebibytes(bytes) + " of " +
                                      memoryResourceName(resource) + " on NUMA node(s) " + where + "; " +
                                      mebibytes(free) + " are free there (" + holders(cells_, nodes, resource) + ")");
    }
  }
  MemoryBlocks taken;
  for (const auto& [resource, bytes] : request) {
    uint64_t remaining = bytes;
    for (int node : nodes) {
      if (remaining == 0) break;
      NumaMemoryCell& cell = cells_[node][resource];
      const uint64_t part = std::min(remaining, cell.free());
      if (part == 0) continue;
      cell.assigned += part;
      taken[node][resource] += part;
      remaining -= part;
    }
  }
  blocks_[owner] = taken;
  return taken;
}

Result<MemoryBlocks> NumaMemory::allocateParts(const std::string& owner, const std::vector<Part>& parts) {
  if (blocks_.count(owner)) return Error(ErrorCode::kAlreadyExists, quoteForMessage(owner) + " already holds memory");
  // Taken part by part from a copy of the cells, so that parts sharing a node see each other.
  auto cells = cells_;
  MemoryBlocks taken;
  for (const Part& part : parts) {
    for (int node : part.nodes) {
      for (const auto& [resource, bytes] : part.request) taken[node][resource] += 0;  // recorded, so stored
    }
    for (const auto& [resource, bytes] : part.request) {
      uint64_t free = 0;
      for (int node : part.nodes) {
        const NumaMemoryCell& cell = cells[node][resource];
        free += cell.free();
      }
      if (free < bytes) {
        std::string where;
        for (int node : part.nodes) where += (where.empty() ? "" : ",") + std::to_string(node);
        if (!part.what.empty()) {
          return Error::resourceExhausted(part.what + " " + where + " cannot provide " + mebibytes(bytes) + " of " +
                                          memoryResourceName(resource) + "; " + mebibytes(free) + " are free there (" +
                                          holders(cells, part.nodes, resource) + ")");
        }
        return Error::resourceExhausted(quoteForMessage(owner) + " needs " + mebibytes(bytes) + " of " +
                                        memoryResourceName(resource) + " on NUMA node(s) " + where + "; " +
                                        mebibytes(free) + " are free there (" + holders(cells, part.nodes, resource) +
                                        ")");
      }
      uint64_t remaining = bytes;
      for (int node : part.nodes) {
        NumaMemoryCell& cell = cells[node][resource];
        const uint64_t share = std::min(remaining, cell.free());
        if (share == 0) continue;
        cell.assigned += share;
        taken[node][resource] += share;
        remaining -= share;
      }
    }
  }
  cells_ = std::move(cells);
  blocks_[owner] = taken;
  return taken;
}

Result<void> NumaMemory::release(const std::string& owner) {
  const auto it = blocks_.find(owner);
  if (it == blocks_.end()) return Error::notFound(quoteForMessage(owner) + " holds no NUMA memory");
  for (const auto& [node, resources] : it->second) {
    for (const auto& [resource, bytes] : resources) cells_[node][resource].assigned -= bytes;
  }
  blocks_.erase(it);
  return {};
}

Result<void> NumaMemory::restore(const std::string& owner, const MemoryBlocks& blocks) {
  if (blocks_.count(owner)) return Error(ErrorCode::kAlreadyExists, quoteForMessage(owner) + " already holds memory");
  for (const auto& [node, resources] : blocks) {
    for (const auto& [resource, bytes] : resources) {
      if (cell(node, resource).free() < bytes) {
        return Error::resourceExhausted(quoteForMessage(owner) + ": " + mebibytes(bytes) + " of " +
                                        memoryResourceName(resource) + " no longer fit NUMA node " +
                                        std::to_string(node));
      }
    }
  }
  for (const auto& [node, resources] : blocks) {
    for (const auto& [resource, bytes] : resources) cells_[node][resource].assigned += bytes;
  }
  blocks_[owner] = blocks;
  return {};
}

CpuSet NumaMemory::mems(const MemoryBlocks& blocks) {
  CpuSet nodes;
  for (const auto& [node, resources] : blocks) nodes.add(node);
  return nodes;
}

}  // namespace vri
