#include "accounting/topology_manager.h"

#include <algorithm>
#include <functional>

#include "base/enum_text.h"
#include "base/quote.h"

namespace vri {

namespace {

std::string gibibytes(uint64_t bytes) {
  if (bytes % (1ULL << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  return std::to_string(bytes >> 20) + " MiB";
}

std::string list(const std::vector<int>& nodes) {
  std::string out;
  for (int node : nodes) out += (out.empty() ? "" : ",") + std::to_string(node);
  return out;
}

// Calls `visit` on every k-subset of `items` in lexicographic order until it returns false.
void forEachSubset(const std::vector<int>& items, size_t k, const std::function<bool(const std::vector<int>&)>& visit) {
  std::vector<size_t> index(k);
  for (size_t i = 0; i < k; ++i) index[i] = i;
  while (true) {
    std::vector<int> subset;
    for (size_t i : index) subset.push_back(items[i]);
    if (!visit(subset)) return;
    size_t i = k;
    while (i > 0 && index[i - 1] == items.size() - k + i - 1) --i;
    if (i == 0) return;
    ++index[i - 1];
    for (size_t j = i; j < k; ++j) index[j] = index[j - 1] + 1;
  }
}

class Aligner {
 public:
  Aligner(const Topology& topology, const CpuSet& freeCpus, const NumaMemory& memory, const AlignmentRequest& request)
      : topo_(topology), free_(freeCpus), memory_(memory), request_(request) {
    for (const NumaNode& node : topology.numaNodes()) nodes_.push_back(node.id);
  }

  const std::vector<int>& nodes() const { return nodes_; }

  bool fitsNow(const std::vector<int>& nodes) const {
    return cpusOn(nodes, free_) >= request_.cpus && memoryFits(nodes, /*now=*/true);
  }
  bool fitsEmpty(const std::vector<int>& nodes) const {
    return cpusOn(nodes, topo_.onlineCpus()) >= request_.cpus && memoryFits(nodes, /*now=*/false);
  }

  // The narrowest width at which the request fits the machine at all (kubelet's minimal affinity size).
  size_t minimalWidth() const {
    for (size_t k = 1; k <= nodes_.size(); ++k) {
      bool found = false;
      forEachSubset(nodes_, k, [&](const std::vector<int>& subset) {
        found = fitsEmpty(subset);
        return !found;
      });
      if (found) return k;
    }
    return nodes_.size() + 1;
  }

  // Narrowest fitting sets of width k, or none.
  std::vector<std::vector<int>> fitsOfWidth(size_t k) const {
    std::vector<std::vector<int>> fits;
    forEachSubset(nodes_, k, [&](const std::vector<int>& subset) {
      if (fitsNow(subset)) fits.push_back(subset);
      return true;
    });
    return fits;
  }

  uint64_t averageDistance(const std::vector<int>& nodes) const {
    uint64_t sum = 0, pairs = 0;
    for (int a : nodes) {
      for (int b : nodes) {
        if (a == b) continue;
        sum += topo_.distance(a, b);
        ++pairs;
      }
    }
    return pairs ? sum / pairs : 0;
  }

  std::string describeNode(int node) const {
    std::string text = "node " + std::to_string(node) + " has " + std::to_string(cpusOn({node}, free_)) + " CPUs";
    for (const auto& [resource, bytes] : request_.memory) {
      text += " and " + gibibytes(memory_.freeOn({node}, resource)) +
              (resource == kRegularMemory ? "" : " of " + memoryResourceName(resource));
    }
    return text + " free";
  }

  std::string describeRequest() const {
    std::string text = std::to_string(request_.cpus) + " CPUs";
    for (const auto& [resource, bytes] : request_.memory) {
      text += " and " + gibibytes(bytes) + (resource == kRegularMemory ? "" : " of " + memoryResourceName(resource));
    }
    return text;
  }

 private:
  int cpusOn(const std::vector<int>& nodes, const CpuSet& cpus) const {
    int count = 0;
    for (int node : nodes) count += (topo_.numaNode(node)->cpus & cpus).count();
    return count;
  }
  bool memoryFits(const std::vector<int>& nodes, bool now) const {
    for (const auto& [resource, bytes] : request_.memory) {
      const uint64_t have = now ? memory_.freeOn(nodes, resource) : memory_.allocatableOn(nodes, resource);
      if (have < bytes) return false;
    }
    return true;
  }

  const Topology& topo_;
  const CpuSet& free_;
  const NumaMemory& memory_;
  const AlignmentRequest& request_;
  std::vector<int> nodes_;
};

}  // namespace

constexpr EnumText<TopologyPolicy, 4> kTopologyPolicyText{"topology-manager policy",
                                                          {{{TopologyPolicy::kNone, "none"},
                                                            {TopologyPolicy::kBestEffort, "best-effort"},
                                                            {TopologyPolicy::kRestricted, "restricted"},
                                                            {TopologyPolicy::kSingleNumaNode, "single-numa-node"}}}};

Result<TopologyPolicy> parseTopologyPolicy(std::string_view text) { return kTopologyPolicyText.parse(text); }
std::string_view topologyPolicyName(TopologyPolicy policy) { return kTopologyPolicyText.name(policy); }

Result<NumaAffinity> alignOnNuma(const Topology& topology, const CpuSet& freeCpus, const NumaMemory& memory,
                                 const AlignmentRequest& request, const TopologyManagerOptions& options) {
  if (options.policy == TopologyPolicy::kNone) return NumaAffinity{};
  const Aligner aligner(topology, freeCpus, memory, request);
  const size_t minimal = aligner.minimalWidth();
  const size_t widest = options.policy == TopologyPolicy::kSingleNumaNode ? 1 : aligner.nodes().size();
  for (size_t k = 1; k <= widest; ++k) {
    std::vector<std::vector<int>> fits = aligner.fitsOfWidth(k);
    if (fits.empty()) continue;
    if (options.preferClosestNumaNodes) {
      std::stable_sort(fits.begin(), fits.end(), [&](const auto& a, const auto& b) {
        return aligner.averageDistance(a) < aligner.averageDistance(b);
      });
    }
    NumaAffinity affinity{fits.front(), k <= minimal};
    if (!affinity.preferred && options.policy != TopologyPolicy::kBestEffort) {
      return Error::resourceExhausted(request.who + " needs " + aligner.describeRequest() + " on " +
                                      std::to_string(minimal) + " NUMA node(s); the narrowest fit now is nodes " +
                                      list(affinity.nodes) + " (policy restricted)");
    }
    return affinity;
  }
  if (options.policy == TopologyPolicy::kBestEffort) return NumaAffinity{aligner.nodes(), false};
  std::string state;
  for (int node : aligner.nodes()) state += (state.empty() ? "" : ", ") + aligner.describeNode(node);
  const std::string where =
      options.policy == TopologyPolicy::kSingleNumaNode ? "on one NUMA node" : "on the NUMA nodes";
  return Error::resourceExhausted(request.who + " needs " + aligner.describeRequest() + " " + where + "; " + state);
}

}  // namespace vri
