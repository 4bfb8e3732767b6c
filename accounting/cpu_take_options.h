// Options that shape how exclusive CPUs are chosen from the free ones.
#pragma once

#include <vector>

namespace vri {

struct CpuTakeOptions {
  // kubelet's static-policy options, with kubelet's meaning.
  bool fullPcpusOnly = false;             // full-pcpus-only
  bool distributeCpusAcrossNuma = false;  // distribute-cpus-across-numa
  bool alignBySocket = false;             // align-by-socket
  bool preferAlignByUncoreCache = false;  // prefer-align-cpus-by-uncorecache

  // VRI's placement: a request that fits one NUMA node is placed inside one
  // (best fit, so large holes stay whole), SMT siblings stay together and odd
  // requests reuse half-used cores. Off: kubelet's packed fill exactly.
  bool numaFit = true;
};

// What one exclusive request asks for.
struct CpuTakeRequest {
  int count = 0;
  // NUMA nodes the CPUs should come from (a topology hint); empty: any.
  // CPUs outside them are used only when these cannot provide enough.
  std::vector<int> preferredNumaNodes;
  // All CPUs from one NUMA node, or a refusal that names the largest free one.
  bool singleNumaNode = false;
};

}  // namespace vri
