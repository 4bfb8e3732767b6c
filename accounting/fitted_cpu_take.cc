#include "accounting/fitted_cpu_take.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace vri {

namespace {

// Free CPUs per core and per NUMA node, computed once per decision.
class FreeCores {
 public:
  FreeCores(const Topology& topology, const CpuSet& available)
      : topo_(topology), free_(available & topology.onlineCpus()), threads_(std::max(1, topology.maxThreadsPerCore())) {
    const auto& cores = topo_.cores();
    freePerCore_.assign(cores.size(), 0);
    for (int cpu : free_) ++freePerCore_[corePosition(topo_.cpu(cpu)->core)];
    const auto& nodes = topo_.numaNodes();
    nodes_.resize(nodes.size());
    for (size_t n = 0; n < nodes.size(); ++n) {
      NodeState& state = nodes_[n];
      state.id = nodes[n].id;
      state.package = nodes[n].package;
      for (int core_id : nodes[n].cores) {
        const size_t position = corePosition(core_id);
        const int free_cpus = freePerCore_[position];
        if (free_cpus == 0) continue;
        state.freeCpus += free_cpus;
        if (free_cpus == cores[position].cpus.count()) {
          state.wholeCores.push_back(position);
        } else {
          state.partialCores.push_back(position);
          state.partialCpus += free_cpus;
        }
      }
    }
  }

  struct NodeState {
    int id = 0;
    int package = -1;
    int freeCpus = 0;
    int partialCpus = 0;             // free CPUs on cores whose siblings are taken
    std::vector<size_t> wholeCores;  // positions in topology.cores(), ascending
    std::vector<size_t> partialCores;
  };

  const std::vector<NodeState>& nodes() const { return nodes_; }
  int threads() const { return threads_; }

  // How well `count` CPUs fit node `n`, smaller is better: CPUs left outside
  // whole cores, whether a whole core must be split, CPUs left free, node id.
  std::tuple<int, int, int, int> fitKey(const NodeState& node, int count) const {
    const int whole_cores_used = std::min(count / threads_, static_cast<int>(node.wholeCores.size()));
    const int outside_whole = count - whole_cores_used * threads_;
    const int splits_core = outside_whole > node.partialCpus ? 1 : 0;
    return {outside_whole, splits_core, node.freeCpus - count, node.id};
  }

  // Takes `count` CPUs from `nodes` into `taken`: whole cores first (in each
  // node from the L3 group they fit best), then CPUs of already split cores
  // (those sharing an L3 with the chosen cores first), and splits whole cores
  // only for what is left.
  void takeFromNodes(const std::vector<const NodeState*>& nodes, int count, CpuSet& taken) const {
    const auto& cores = topo_.cores();
    int remaining = count;
    std::vector<size_t> used;
    std::vector<int> l3_used;
    for (const NodeState* node : nodes) {
      const int wanted = std::min<int>(remaining / threads_, node->wholeCores.size());
      for (size_t position : chooseWholeCores(node->wholeCores, wanted)) {
        taken |= cores[position].cpus;
        remaining -= cores[position].cpus.count();
        used.push_back(position);
        l3_used.push_back(cores[position].l3);
      }
    }
    if (remaining <= 0) return;
    std::vector<size_t> partial;
    for (const NodeState* node : nodes)
      partial.insert(partial.end(), node->partialCores.begin(), node->partialCores.end());
    const auto nearUsed = [&](size_t position) {
      return std::find(l3_used.begin(), l3_used.end(), cores[position].l3) != l3_used.end();
    };
    std::stable_sort(partial.begin(), partial.end(), [&](size_t a, size_t b) { return nearUsed(a) > nearUsed(b); });
    for (size_t position : partial) {
      for (int cpu : cores[position].cpus& free_) {
        if (remaining == 0) return;
        taken.add(cpu);
        --remaining;
      }
    }
    for (const NodeState* node : nodes) {
      for (size_t position : node->wholeCores) {
        if (std::find(used.begin(), used.end(), position) != used.end()) continue;
        for (int cpu : cores[position].cpus) {
          if (remaining == 0) return;
          taken.add(cpu);
          --remaining;
        }
      }
    }
  }

 private:
  size_t corePosition(int core_id) const { return static_cast<size_t>(topo_.core(core_id) - topo_.cores().data()); }

  // `wanted` of `candidates`: inside the L3 group holding the fewest free
  // whole cores that still suffices, else from the fullest groups first.
  std::vector<size_t> chooseWholeCores(const std::vector<size_t>& candidates, int wanted) const {
    if (wanted <= 0) return {};
    std::map<int, std::vector<size_t>> by_l3;
    for (size_t position : candidates) by_l3[topo_.cores()[position].l3].push_back(position);
    const std::vector<size_t>* best = nullptr;
    for (const auto& [l3, group] : by_l3) {
      if (static_cast<int>(group.size()) >= wanted && (best == nullptr || group.size() < best->size())) {
        best = &group;
      }
    }
    if (best != nullptr) return {best->begin(), best->begin() + wanted};
    std::vector<const std::vector<size_t>*> groups;
    for (const auto& entry : by_l3) groups.push_back(&entry.second);
    std::stable_sort(groups.begin(), groups.end(), [](auto* a, auto* b) { return a->size() > b->size(); });
    std::vector<size_t> chosen;
    for (const auto* group : groups) {
      for (size_t position : *group) {
        if (static_cast<int>(chosen.size()) == wanted) return chosen;
        chosen.push_back(position);
      }
    }
    return chosen;
  }

  const Topology& topo_;
  CpuSet free_;
  int threads_;
  std::vector<int> freePerCore_;
  std::vector<NodeState> nodes_;
};

// The fewest nodes holding `count` free CPUs: within one package when one
// can, choosing the package that needs the fewest nodes and leaves the least.
std::vector<const FreeCores::NodeState*> chooseNodes(const std::vector<FreeCores::NodeState>& nodes, int count) {
  const auto fullest = [](const FreeCores::NodeState* a, const FreeCores::NodeState* b) {
    return a->freeCpus != b->freeCpus ? a->freeCpus > b->freeCpus : a->id < b->id;
  };
  const auto pick = [&](std::vector<const FreeCores::NodeState*> pool) {
    std::sort(pool.begin(), pool.end(), fullest);
    std::vector<const FreeCores::NodeState*> chosen;
    int total = 0;
    for (const auto* node : pool) {
      if (total >= count) break;
      chosen.push_back(node);
      total += node->freeCpus;
    }
    return std::make_pair(total >= count ? chosen : std::vector<const FreeCores::NodeState*>{}, total - count);
  };
  std::map<int, std::vector<const FreeCores::NodeState*>> by_package;
  std::vector<const FreeCores::NodeState*> all;
  for (const auto& node : nodes) {
    if (node.freeCpus == 0) continue;
    by_package[node.package].push_back(&node);
    all.push_back(&node);
  }
  std::vector<const FreeCores::NodeState*> best;
  int best_leftover = 0;
  for (const auto& [package, pool] : by_package) {
    auto [chosen, leftover] = pick(pool);
    if (chosen.empty()) continue;
    if (best.empty() || chosen.size() < best.size() || (chosen.size() == best.size() && leftover < best_leftover)) {
      best = chosen;
      best_leftover = leftover;
    }
  }
  if (!best.empty()) return best;
  return pick(all).first;
}

}  // namespace

Result<CpuSet> takeFitted(const Topology& topology, const CpuSet& available, int count) {
  if (count <= 0) return CpuSet();
  const FreeCores state(topology, available);
  int total_free = 0;
  for (const auto& node : state.nodes()) total_free += node.freeCpus;
  if (count > total_free) {
    return Error::resourceExhausted("not enough CPUs: requested " + std::to_string(count) + ", " +
                                    std::to_string(total_free) + " available");
  }
  const FreeCores::NodeState* best = nullptr;
  for (const auto& node : state.nodes()) {
    if (node.freeCpus < count) continue;
    if (best == nullptr || state.fitKey(node, count) < state.fitKey(*best, count)) best = &node;
  }
  CpuSet taken;
  state.takeFromNodes(
      best != nullptr ? std::vector<const FreeCores::NodeState*>{best} : chooseNodes(state.nodes(), count), count,
      taken);
  if (taken.count() != count) {
    return Error::internal("fitted CPU choice took " + std::to_string(taken.count()) + " of " + std::to_string(count) +
                           " CPUs");
  }
  return taken;
}

}  // namespace vri
