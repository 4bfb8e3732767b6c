#include "accounting/topology.h"

#include <algorithm>
#include <string>

namespace vri {

namespace {

// Ids index flat lookup tables; real machines stay far below this.
constexpr int kMaxObjectId = 1 << 16;

Result<void> checkId(int id, int limit, const char* what) {
  if (id < 0 || id >= limit) {
    return Error::invalidArgument(std::string(what) + " id " + std::to_string(id) + " is out of range [0, " +
                                  std::to_string(limit) + ")");
  }
  return {};
}

// Places `position` at `index[id]`, growing the table as needed.
void setIndex(std::vector<int>& index, int id, int position) {
  if (static_cast<size_t>(id) >= index.size()) index.resize(static_cast<size_t>(id) + 1, -1);
  index[static_cast<size_t>(id)] = position;
}

int lookup(const std::vector<int>& index, int id) {
  if (id < 0 || static_cast<size_t>(id) >= index.size()) return -1;
  return index[static_cast<size_t>(id)];
}

void insertSorted(std::vector<int>& ids, int id) {
  auto it = std::lower_bound(ids.begin(), ids.end(), id);
  if (it == ids.end() || *it != id) ids.insert(it, id);
}

}  // namespace

Result<Topology> Topology::create(TopologyDescription description) {
  Topology topo;
  topo.source_ = std::move(description.source);
  topo.offlineCpus_ = std::move(description.offlineCpus);
  if (description.cpus.empty()) return Error::invalidArgument("topology has no online CPU");

  std::sort(description.cpus.begin(), description.cpus.end(),
            [](const CpuLocation& a, const CpuLocation& b) { return a.cpu < b.cpu; });
  // NUMA nodes are kept by ascending id; the distance matrix follows the same order.
  std::vector<size_t> numa_order(description.numaNodes.size());
  for (size_t i = 0; i < numa_order.size(); ++i) numa_order[i] = i;
  std::sort(numa_order.begin(), numa_order.end(),
            [&](size_t a, size_t b) { return description.numaNodes[a].node < description.numaNodes[b].node; });
  for (size_t position : numa_order) {
    const NumaNodeMemory& memory = description.numaNodes[position];
    VRI_TRY(checkId(memory.node, kMaxObjectId, "NUMA node"));
    if (lookup(topo.numaIndex_, memory.node) >= 0) {
      return Error::invalidArgument("NUMA node " + std::to_string(memory.node) + " is described twice");
    }
    NumaNode node;
    node.id = memory.node;
    node.package = memory.package;
    node.memoryBytes = memory.memoryBytes;
    node.hugepages = memory.hugepages;
    setIndex(topo.numaIndex_, node.id, static_cast<int>(topo.numaNodes_.size()));
    topo.numaNodes_.push_back(std::move(node));
  }

  for (const CpuLocation& location : description.cpus) {
    VRI_TRY(checkId(location.cpu, CpuSet::kMaxCpus, "CPU"));
    VRI_TRY(checkId(location.core, kMaxObjectId, "core"));
    VRI_TRY(checkId(location.package, kMaxObjectId, "package"));
    if (location.l3 != -1) VRI_TRY(checkId(location.l3, kMaxObjectId, "L3"));
    if (topo.onlineCpus_.contains(location.cpu)) {
      return Error::invalidArgument("CPU " + std::to_string(location.cpu) + " is described twice");
    }
    if (topo.offlineCpus_.contains(location.cpu)) {
      return Error::invalidArgument("CPU " + std::to_string(location.cpu) + " is both online and offline");
    }
    const int numa_position = lookup(topo.numaIndex_, location.numaNode);
    if (numa_position < 0) {
      return Error::invalidArgument("CPU " + std::to_string(location.cpu) + " names NUMA node " +
                                    std::to_string(location.numaNode) + ", which is not described");
    }
    topo.onlineCpus_.add(location.cpu);
    setIndex(topo.cpuIndex_, location.cpu, static_cast<int>(topo.cpus_.size()));
    topo.cpus_.push_back(location);

    NumaNode& node = topo.numaNodes_[static_cast<size_t>(numa_position)];
    node.cpus.add(location.cpu);
    if (node.package == -1) node.package = location.package;

    int package_position = lookup(topo.packageIndex_, location.package);
    if (package_position < 0) {
      package_position = static_cast<int>(topo.packages_.size());
      setIndex(topo.packageIndex_, location.package, package_position);
      topo.packages_.push_back(Package{location.package, {}, {}, {}});
    }
    Package& package = topo.packages_[static_cast<size_t>(package_position)];
    package.cpus.add(location.cpu);
    insertSorted(package.numaNodes, location.numaNode);
    insertSorted(package.cores, location.core);
    insertSorted(node.cores, location.core);

    int core_position = lookup(topo.coreIndex_, location.core);
    if (core_position < 0) {
      core_position = static_cast<int>(topo.cores_.size());
      setIndex(topo.coreIndex_, location.core, core_position);
      topo.cores_.push_back(Core{location.core, location.package, location.numaNode, location.l3, {}});
    }
    Core& core = topo.cores_[static_cast<size_t>(core_position)];
    if (core.package != location.package || core.numaNode != location.numaNode || core.l3 != location.l3) {
      return Error::invalidArgument("core " + std::to_string(core.id) +
                                    " spans more than one package, NUMA node or L3 group");
    }
    core.cpus.add(location.cpu);

    if (location.l3 != -1) {
      int l3_position = lookup(topo.l3Index_, location.l3);
      if (l3_position < 0) {
        l3_position = static_cast<int>(topo.l3Groups_.size());
        setIndex(topo.l3Index_, location.l3, l3_position);
        topo.l3Groups_.push_back(L3Group{location.l3, location.package, {}});
      }
      L3Group& group = topo.l3Groups_[static_cast<size_t>(l3_position)];
      if (group.package != location.package) {
        return Error::invalidArgument("L3 group " + std::to_string(group.id) + " spans more than one package");
      }
      group.cpus.add(location.cpu);
    }
  }

  // A CPU-less node outside any package stays at -1; those inside one are listed with it.
  for (const NumaNode& node : topo.numaNodes_) {
    if (node.cpus.empty() && node.package >= 0) {
      const int position = lookup(topo.packageIndex_, node.package);
      if (position >= 0) insertSorted(topo.packages_[static_cast<size_t>(position)].numaNodes, node.id);
    }
  }

  // Vectors come out in first-seen order; sort them by id and rebuild the indexes.
  const auto by_id = [](const auto& a, const auto& b) { return a.id < b.id; };
  std::sort(topo.packages_.begin(), topo.packages_.end(), by_id);
  std::sort(topo.cores_.begin(), topo.cores_.end(), by_id);
  std::sort(topo.l3Groups_.begin(), topo.l3Groups_.end(), by_id);
  for (size_t i = 0; i < topo.packages_.size(); ++i)
    setIndex(topo.packageIndex_, topo.packages_[i].id, static_cast<int>(i));
  for (size_t i = 0; i < topo.cores_.size(); ++i) setIndex(topo.coreIndex_, topo.cores_[i].id, static_cast<int>(i));
  for (size_t i = 0; i < topo.l3Groups_.size(); ++i) setIndex(topo.l3Index_, topo.l3Groups_[i].id, static_cast<int>(i));

  const int first_threads = topo.cores_.front().cpus.count();
  for (const Core& core : topo.cores_) {
    topo.maxThreadsPerCore_ = std::max(topo.maxThreadsPerCore_, core.cpus.count());
    if (core.cpus.count() != first_threads) topo.uniformSmt_ = false;
  }

  const size_t node_count = topo.numaNodes_.size();
  if (!description.distances.empty()) {
    if (description.distances.size() != node_count) {
      return Error::invalidArgument("distance matrix has " + std::to_string(description.distances.size()) +
                                    " rows for " + std::to_string(node_count) + " NUMA nodes");
    }
    for (const auto& row : description.distances) {
      if (row.size() != node_count) return Error::invalidArgument("distance matrix is not square");
    }
    topo.distances_.assign(node_count, std::vector<uint32_t>(node_count, 0));
    for (size_t i = 0; i < node_count; ++i) {
      for (size_t j = 0; j < node_count; ++j) {
        topo.distances_[i][j] = description.distances[numa_order[i]][numa_order[j]];
      }
    }
    topo.distancesFromMachine_ = true;
  } else {
    topo.distances_.assign(node_count, std::vector<uint32_t>(node_count, 0));
    for (size_t i = 0; i < node_count; ++i) {
      for (size_t j = 0; j < node_count; ++j) {
        const NumaNode& a = topo.numaNodes_[i];
        const NumaNode& b = topo.numaNodes_[j];
        topo.distances_[i][j] = (i == j) ? 10 : (a.package >= 0 && a.package == b.package) ? 11 : 21;
      }
    }
  }
  return topo;
}

const CpuLocation* Topology::cpu(int id) const {
  const int position = lookup(cpuIndex_, id);
  return position < 0 ? nullptr : &cpus_[static_cast<size_t>(position)];
}

const Core* Topology::core(int id) const {
  const int position = lookup(coreIndex_, id);
  return position < 0 ? nullptr : &cores_[static_cast<size_t>(position)];
}

const NumaNode* Topology::numaNode(int id) const {
  const int position = lookup(numaIndex_, id);
  return position < 0 ? nullptr : &numaNodes_[static_cast<size_t>(position)];
}

const Package* Topology::package(int id) const {
  const int position = lookup(packageIndex_, id);
  return position < 0 ? nullptr : &packages_[static_cast<size_t>(position)];
}

const L3Group* Topology::l3Group(int id) const {
  const int position = lookup(l3Index_, id);
  return position < 0 ? nullptr : &l3Groups_[static_cast<size_t>(position)];
}

CpuSet Topology::siblings(int cpu_id) const {
  const CpuLocation* location = cpu(cpu_id);
  if (location == nullptr) return {};
  return core(location->core)->cpus;
}

uint32_t Topology::distance(int fromNode, int toNode) const {
  const int from = lookup(numaIndex_, fromNode);
  const int to = lookup(numaIndex_, toNode);
  if (from < 0 || to < 0) return 0;
  return distances_[static_cast<size_t>(from)][static_cast<size_t>(to)];
}

uint64_t Topology::totalMemoryBytes() const {
  uint64_t total = 0;
  for (const NumaNode& node : numaNodes_) total += node.memoryBytes;
  return total;
}

}  // namespace vri
