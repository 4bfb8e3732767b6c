#include "accounting/cpu_take.h"

#include "accounting/fitted_cpu_take.h"
#include "accounting/kubelet_cpu_take.h"

namespace vri {

namespace {

Result<CpuSet> choose(const Topology& topology, const CpuSet& available, int count, const CpuTakeOptions& options) {
  if (options.distributeCpusAcrossNuma) {
    const int group = options.fullPcpusOnly ? topology.maxThreadsPerCore() : 1;
    return takeDistributed(topology, available, count, group, options.alignBySocket);
  }
  if (options.numaFit) return takeFitted(topology, available, count);
  return takePacked(topology, available, count, options.preferAlignByUncoreCache);
}

// The CPUs a NUMA preference points at: the nodes' own, or with
// align-by-socket every CPU of the packages holding them.
CpuSet preferredCpus(const Topology& topology, const std::vector<int>& nodes, bool alignBySocket) {
  CpuSet cpus;
  for (int id : nodes) {
    const NumaNode* node = topology.numaNode(id);
    if (node == nullptr) continue;
    const Package* package = alignBySocket ? topology.package(node->package) : nullptr;
    cpus |= package != nullptr ? package->cpus : node->cpus;
  }
  return cpus;
}

// With singleNumaNode: the candidates of the node that holds the request
// with the fewest CPUs to spare (best fit).
Result<CpuSet> singleNodeCandidates(const Topology& topology, const CpuSet& candidates, int count, bool fullCores) {
  CpuSet best;
  int largest = 0, largest_node = -1;
  for (const NumaNode& node : topology.numaNodes()) {
    const CpuSet on_node = candidates & node.cpus;
    const int free = on_node.count();
    if (free >= count && (best.empty() || free < best.count())) best = on_node;
    if (free > largest) largest = free, largest_node = node.id;
  }
  if (!best.empty()) return best;
  std::string message = "need " + std::to_string(count) + " CPUs on one NUMA node" +
                        (fullCores ? " with full cores" : "") + "; largest free: " + std::to_string(largest);
  if (largest_node >= 0) message += " on node " + std::to_string(largest_node);
  return Error::resourceExhausted(message);
}

}  // namespace

CpuSet wholeFreeCoreCpus(const Topology& topology, const CpuSet& available) {
  CpuSet whole;
  for (const Core& core : topology.cores()) {
    if (core.cpus.isSubsetOf(available)) whole |= core.cpus;
  }
  return whole;
}

Result<CpuSet> takeCpus(const Topology& topology, const CpuSet& available, const CpuTakeRequest& request,
                        const CpuTakeOptions& options) {
  const int count = request.count;
  if (count < 0) return Error::invalidArgument("requested " + std::to_string(count) + " CPUs");
  if (count == 0) return CpuSet();
  CpuSet candidates = available & topology.onlineCpus();
  if (count > candidates.count()) {
    return Error::resourceExhausted("need " + std::to_string(count) + " exclusive CPUs; " +
                                    std::to_string(candidates.count()) + " are free");
  }
  const int threads = topology.maxThreadsPerCore();
  if (options.fullPcpusOnly && threads > 1) {
    if (count % threads != 0) {
      return Error::invalidArgument("SMT alignment error: requested " + std::to_string(count) +
                                    " CPUs, not a multiple of the " + std::to_string(threads) +
                                    " threads per core (full-pcpus-only)");
    }
    candidates = wholeFreeCoreCpus(topology, candidates);
    if (count > candidates.count()) {
      const int whole_free = candidates.count() / threads;
      return Error::resourceExhausted("SMT alignment error: need " + std::to_string(count / threads) +
                                      " whole cores (" + std::to_string(count) + " CPUs); " +
                                      std::to_string(whole_free) +
                                      (whole_free == 1 ? " whole core is" : " whole cores are") + " free");
    }
  }
  if (request.singleNumaNode) {
    VRI_ASSIGN_OR_RETURN(candidates, singleNodeCandidates(topology, candidates, count, options.fullPcpusOnly));
  }
  if (request.preferredNumaNodes.empty()) return choose(topology, candidates, count, options);

  // As kubelet does with a topology hint: as many as possible from the
  // preferred CPUs, the rest from anywhere.
  const CpuSet aligned = candidates & preferredCpus(topology, request.preferredNumaNodes, options.alignBySocket);
  const int from_aligned = std::min(count, aligned.count());
  VRI_ASSIGN_OR_RETURN(CpuSet taken, choose(topology, aligned, from_aligned, options));
  if (from_aligned < count) {
    VRI_ASSIGN_OR_RETURN(CpuSet rest, choose(topology, candidates - taken, count - from_aligned, options));
    taken |= rest;
  }
  return taken;
}

}  // namespace vri
