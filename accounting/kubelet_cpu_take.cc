#include "accounting/kubelet_cpu_take.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

namespace vri {

namespace {

// The free CPUs of the machine and the request being filled, with kubelet's
// orderings over them. Every ordering sorts by fewest free CPUs, then id.
class Accumulator {
 public:
  Accumulator(const Topology& topology, const CpuSet& available, int count)
      : topo_(topology), free_(available & topology.onlineCpus()), needed_(count) {
    int nodes_with_cpus = 0;
    for (const NumaNode& node : topo_.numaNodes()) nodes_with_cpus += node.cpus.empty() ? 0 : 1;
    numaFirst_ = static_cast<int>(topo_.packages().size()) >= nodes_with_cpus;
    // kubelet falls back to the package when a machine reports no L3 cache.
    if (topo_.l3Groups().empty()) {
      for (const Package& package : topo_.packages()) uncores_.push_back(package.cpus);
    } else {
      for (const L3Group& group : topo_.l3Groups()) uncores_.push_back(group.cpus);
    }
  }

  const CpuSet& result() const { return result_; }
  const CpuSet& free() const { return free_; }
  int needed() const { return needed_; }
  bool satisfied() const { return needed_ < 1; }
  bool failed() const { return needed_ > free_.count(); }
  bool needsAtLeast(int n) const { return needed_ >= n; }

  void take(const CpuSet& cpus) {
    result_ |= cpus;
    free_ -= cpus;
    needed_ -= cpus.count();
  }

  int freeIn(const CpuSet& cpus) const { return (cpus & free_).count(); }

  // Level 1 and 2: whole NUMA nodes and packages, the larger unit first.
  void takeFullFirstLevel() { numaFirst_ ? takeFullNumaNodes() : takeFullSockets(); }
  void takeFullSecondLevel() { numaFirst_ ? takeFullSockets() : takeFullNumaNodes(); }

  void takeFullNumaNodes() { takeWhole(sortedNumaNodes(), numaCpus()); }
  void takeFullSockets() { takeWhole(sortedSockets(), socketCpus()); }
  void takeFullCores() { takeWhole(sortedCores(), coreCpus()); }

  void takeRemainingCpus() {
    for (int cpu : sortedCpus()) {
      if (satisfied()) return;
      take(CpuSet{cpu});
    }
  }

  // prefer-align-cpus-by-uncorecache: whole L3 groups when the request is that
  // big, otherwise the request inside one L3 group when it fits there.
  void takeUncoreCache() {
    const int per_uncore = topo_.onlineCpus().count() / static_cast<int>(uncores_.size());
    for (int uncore : sortedUncores()) {
      if (needsAtLeast(per_uncore)) takeFullUncores();
      if (satisfied()) return;
      takePartialUncore(uncore);
      if (satisfied()) return;
    }
  }

  std::vector<int> sortedNumaNodes() const {
    if (numaFirst_) return sortByFree(numaIdsWithFree(topo_.onlineCpus()), numaCpus());
    std::vector<int> order;
    for (int socket : sortedSockets()) {
      auto nodes = sortByFree(numaIdsWithFree(topo_.package(socket)->cpus), numaCpus());
      order.insert(order.end(), nodes.begin(), nodes.end());
    }
    return order;
  }

  std::vector<int> sortedSockets() const {
    if (!numaFirst_) return sortByFree(socketIdsWithFree(topo_.onlineCpus()), socketCpus());
    std::vector<int> order;
    for (int node : sortedNumaNodes()) {
      auto sockets = sortByFree(socketIdsWithFree(topo_.numaNode(node)->cpus), socketCpus());
      order.insert(order.end(), sockets.begin(), sockets.end());
    }
    return order;
  }

  std::vector<int> sortedCores() const {
    std::vector<int> order;
    const auto append = [&](const CpuSet& within) {
      auto cores = sortByFree(coreIdsWithFree(within), coreCpus());
      order.insert(order.end(), cores.begin(), cores.end());
    };
    if (numaFirst_) {
      for (int socket : sortedSockets()) append(topo_.package(socket)->cpus);
    } else {
      for (int node : sortedNumaNodes()) append(topo_.numaNode(node)->cpus);
    }
    return order;
  }

  std::vector<int> sortedCpus() const {
    std::vector<int> order;
    for (int core : sortedCores()) {
      for (int cpu : topo_.core(core)->cpus& free_) order.push_back(cpu);
    }
    return order;
  }

 private:
  using CpusOf = std::function<const CpuSet&(int)>;

  CpusOf numaCpus() const {
    return [this](int id) -> const CpuSet& { return topo_.numaNode(id)->cpus; };
  }
  CpusOf socketCpus() const {
    return [this](int id) -> const CpuSet& { return topo_.package(id)->cpus; };
  }
  CpusOf coreCpus() const {
    return [this](int id) -> const CpuSet& { return topo_.core(id)->cpus; };
  }
  CpusOf uncoreCpus() const {
    return [this](int id) -> const CpuSet& { return uncores_[static_cast<size_t>(id)]; };
  }

  // Takes each unit, in order, that is entirely free and no larger than what is still needed.
  void takeWhole(const std::vector<int>& ids, const CpusOf& cpusOf) {
    for (int id : ids) {
      const CpuSet& cpus = cpusOf(id);
      if (freeIn(cpus) == cpus.count() && needsAtLeast(cpus.count())) take(cpus);
    }
  }

  std::vector<int> sortByFree(std::vector<int> ids, const CpusOf& cpusOf) const {
    std::vector<std::pair<int, int>> keyed;
    keyed.reserve(ids.size());
    for (int id : ids) keyed.emplace_back(freeIn(cpusOf(id)), id);
    std::sort(keyed.begin(), keyed.end());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = keyed[i].second;
    return ids;
  }

  // Ids of the objects holding at least one free CPU of `within`.
  std::vector<int> numaIdsWithFree(const CpuSet& within) const {
    std::vector<int> ids;
    for (const NumaNode& node : topo_.numaNodes()) {
      if (node.cpus.intersects(within & free_)) ids.push_back(node.id);
    }
    return ids;
  }
  std::vector<int> socketIdsWithFree(const CpuSet& within) const {
    std::vector<int> ids;
    for (const Package& package : topo_.packages()) {
      if (package.cpus.intersects(within & free_)) ids.push_back(package.id);
    }
    return ids;
  }
  std::vector<int> coreIdsWithFree(const CpuSet& within) const {
    std::vector<int> ids;
    const CpuSet candidates = within & free_;
    int last_core = -1;
    for (int cpu : candidates) {
      const int core = topo_.cpu(cpu)->core;
      if (core != last_core && std::find(ids.begin(), ids.end(), core) == ids.end()) ids.push_back(core);
      last_core = core;
    }
    return ids;
  }

  std::vector<int> sortedUncores() const {
    std::vector<int> order;
    for (int node : sortedNumaNodes()) {
      std::vector<int> ids;
      const CpuSet candidates = topo_.numaNode(node)->cpus & free_;
      for (size_t i = 0; i < uncores_.size(); ++i) {
        if (uncores_[i].intersects(candidates)) ids.push_back(static_cast<int>(i));
      }
      auto sorted = sortByFree(ids, uncoreCpus());
      order.insert(order.end(), sorted.begin(), sorted.end());
    }
    return order;
  }

  void takeFullUncores() { takeWhole(sortedUncores(), uncoreCpus()); }

  // Claims the request inside one L3 group: the fewest cores (lowest ids
  // first) that hold the CPUs still needed, or nothing.
  void takePartialUncore(int uncore) {
    const int threads = std::max(1, topo_.maxThreadsPerCore());
    const int cores_needed = (needed_ + threads - 1) / threads;
    std::vector<int> cores = coreIdsWithFree(uncores_[static_cast<size_t>(uncore)]);
    std::sort(cores.begin(), cores.end());
    if (static_cast<int>(cores.size()) > cores_needed) cores.resize(static_cast<size_t>(cores_needed));
    CpuSet cpus;
    for (int core : cores) cpus |= topo_.core(core)->cpus & free_;
    if (needed_ % 2 != 0 && threads > 1 && cpus.count() > needed_) cpus.remove(cpus.last());
    if (cpus.count() == needed_) take(cpus);
  }

  const Topology& topo_;
  CpuSet free_;
  CpuSet result_;
  int needed_;
  bool numaFirst_ = true;
  std::vector<CpuSet> uncores_;
};

Error notEnough(int count, const CpuSet& available) {
  return Error::resourceExhausted("not enough CPUs: requested " + std::to_string(count) + ", " +
                                  std::to_string(available.count()) + " available");
}

// kubelet rounds its balance figures to three decimals; ties depend on it.
double rounded(double value) { return std::round(value * 1000) / 1000; }

double standardDeviation(const std::map<int, int>& values) {
  double sum = 0;
  for (const auto& [id, value] : values) sum += value;
  const double mean = rounded(sum / static_cast<double>(values.size()));
  double squares = 0;
  for (const auto& [id, value] : values) squares += (value - mean) * (value - mean);
  return rounded(std::sqrt(squares / static_cast<double>(values.size())));
}

enum class Loop { kContinue, kBreak };

// Calls `visit` on every k-subset of `items`, in lexicographic order.
Loop forEachCombination(const std::vector<int>& items, size_t k, std::vector<int>& chosen, size_t start,
                        const std::function<Loop(const std::vector<int>&)>& visit) {
  if (chosen.size() == k) return visit(chosen);
  for (size_t i = start; i + (k - chosen.size()) <= items.size(); ++i) {
    chosen.push_back(items[i]);
    const Loop control = forEachCombination(items, k, chosen, i + 1, visit);
    chosen.pop_back();
    if (control == Loop::kBreak) return Loop::kBreak;
  }
  return Loop::kContinue;
}

void forEachCombination(const std::vector<int>& items, size_t k,
                        const std::function<Loop(const std::vector<int>&)>& visit) {
  if (k == 0) return;
  std::vector<int> chosen;
  forEachCombination(items, k, chosen, 0, visit);
}

bool inOnePackage(const Topology& topology, const std::vector<int>& nodes) {
  for (int node : nodes) {
    if (topology.numaNode(node)->package != topology.numaNode(nodes.front())->package) return false;
  }
  return true;
}

}  // namespace

Result<CpuSet> takePacked(const Topology& topology, const CpuSet& available, int count, bool preferAlignByUncoreCache) {
  Accumulator acc(topology, available, count);
  if (acc.satisfied()) return acc.result();
  if (acc.failed()) return notEnough(count, acc.free());
  acc.takeFullFirstLevel();
  if (acc.satisfied()) return acc.result();
  acc.takeFullSecondLevel();
  if (acc.satisfied()) return acc.result();
  if (preferAlignByUncoreCache) {
    acc.takeUncoreCache();
    if (acc.satisfied()) return acc.result();
  }
  acc.takeFullCores();
  if (acc.satisfied()) return acc.result();
  acc.takeRemainingCpus();
  if (acc.satisfied()) return acc.result();
  return Error::internal("packed CPU choice ended short of " + std::to_string(count) + " CPUs");
}

Result<CpuSet> takeDistributed(const Topology& topology, const CpuSet& available, int count, int groupSize,
                               bool alignBySocket) {
  if (groupSize < 1 || count % groupSize != 0) return takePacked(topology, available, count, false);
  Accumulator acc(topology, available, count);
  if (acc.satisfied()) return acc.result();
  if (acc.failed()) return notEnough(count, acc.free());

  const std::vector<int> nodes = acc.sortedNumaNodes();
  int nodes_with_cpus = 0;
  for (const NumaNode& node : topology.numaNodes()) nodes_with_cpus += node.cpus.empty() ? 0 : 1;
  const int groups_total = (topology.onlineCpus().count() - 1) / groupSize + 1;
  const int groups_per_node = (groups_total - 1) / nodes_with_cpus + 1;
  const int groups_needed = (count - 1) / groupSize + 1;
  const int min_nodes = (groups_needed - 1) / groups_per_node + 1;
  const int max_nodes = std::min(groups_needed, static_cast<int>(nodes.size()));

  const auto freeOn = [&](int node) { return acc.freeIn(topology.numaNode(node)->cpus); };
  // The even share per node, capped (with align-by-socket) by what each node holds.
  const auto shareFor = [&](const std::vector<int>& combo) {
    int share = (count / static_cast<int>(combo.size()) / groupSize) * groupSize;
    if (alignBySocket) {
      for (int node : combo) share = std::min(share, freeOn(node) / groupSize * groupSize);
    }
    return share;
  };

  for (int k = min_nodes; k <= max_nodes; ++k) {
    double best_balance = std::numeric_limits<double>::max();
    std::vector<int> best_combo, best_remainder;
    bool best_in_one_package = false;
    forEachCombination(nodes, static_cast<size_t>(k), [&](const std::vector<int>& combo) {
      if (best_balance == 0 && (!alignBySocket || best_in_one_package)) return Loop::kBreak;
      int free_total = 0, groups = 0;
      for (int node : combo) {
        free_total += freeOn(node);
        groups += freeOn(node) / groupSize;
      }
      if (free_total < count || groups * groupSize < count) return Loop::kContinue;
      const int share = shareFor(combo);
      for (int node : combo) {
        if (freeOn(node) < share) return Loop::kContinue;
      }
      std::map<int, int> after;
      for (int node : nodes) after[node] = freeOn(node);
      for (int node : combo) after[node] -= share;
      const int remainder = count - share * static_cast<int>(combo.size());
      std::vector<int> remainder_candidates;
      for (int node : combo) {
        if (after[node] >= groupSize) remainder_candidates.push_back(node);
      }
      double local_balance = std::numeric_limits<double>::max();
      std::vector<int> local_remainder;
      if (remainder == 0) local_balance = standardDeviation(after);
      for (size_t size = remainder_candidates.size(); remainder > 0 && size >= 1; --size) {
        forEachCombination(remainder_candidates, size, [&](const std::vector<int>& subset) {
          std::map<int, int> trial = after;
          int groups_left = 0;
          for (int node : subset) groups_left += trial[node] / groupSize;
          if (groups_left * groupSize < remainder) return Loop::kContinue;
          for (int left = remainder; left > 0;) {
            for (int node : subset) {
              if (left == 0) break;
              if (trial[node] < groupSize) continue;
              trial[node] -= groupSize;
              left -= groupSize;
            }
          }
          const double balance = standardDeviation(trial);
          if (balance < local_balance) {
            local_balance = balance;
            local_remainder = subset;
          }
          return Loop::kContinue;
        });
      }
      const bool in_one_package = alignBySocket && inOnePackage(topology, combo);
      bool better = local_balance < best_balance;
      if (alignBySocket && in_one_package != best_in_one_package) better = in_one_package;
      if (better) {
        best_balance = local_balance;
        best_combo = combo;
        best_remainder = local_remainder;
        best_in_one_package = in_one_package;
      }
      return Loop::kContinue;
    });
    if (best_combo.empty()) continue;

    const int share = shareFor(best_combo);
    for (int node : best_combo) {
      VRI_ASSIGN_OR_RETURN(CpuSet cpus, takePacked(topology, topology.numaNode(node)->cpus & acc.free(), share, false));
      acc.take(cpus);
    }
    int remainder = count - share * static_cast<int>(best_combo.size());
    while (remainder > 0) {
      const int before = remainder;
      for (int node : best_remainder) {
        if (remainder == 0) break;
        if (freeOn(node) < groupSize) continue;
        VRI_ASSIGN_OR_RETURN(CpuSet cpus,
                             takePacked(topology, topology.numaNode(node)->cpus & acc.free(), groupSize, false));
        acc.take(cpus);
        remainder -= groupSize;
      }
      if (remainder == before) break;
    }
    if (acc.needed() != 0) {
      return Error::internal("distributed CPU choice is off by " + std::to_string(acc.needed()) + " CPUs");
    }
    return acc.result();
  }
  return takePacked(topology, available, count, false);
}

}  // namespace vri
