// The literal machines kubelet's CPU-manager tests use, built by formula.
#pragma once

#include <functional>

#include "accounting/topology.h"

namespace vri::testing {

struct KubeletCpu {
  int core, socket, numa;
};

inline Topology kubeletTopology(int cpus, const std::function<KubeletCpu(int)>& place) {
  TopologyDescription d;
  int max_numa = 0;
  for (int cpu = 0; cpu < cpus; ++cpu) {
    const KubeletCpu where = place(cpu);
    d.cpus.push_back({cpu, where.core, where.socket, where.numa, -1});
    max_numa = std::max(max_numa, where.numa);
  }
  for (int node = 0; node <= max_numa; ++node) d.numaNodes.push_back({node, -1, 0, {}});
  return std::move(Topology::create(d)).value();
}

// 1 socket, 4 cores x 2 threads; siblings are cpu and cpu+4.
inline Topology singleSocketHT() {
  return kubeletTopology(8, [](int cpu) { return KubeletCpu{cpu % 4, 0, 0}; });
}

// 2 sockets x 3 cores x 2 threads, one NUMA node per socket; cores alternate sockets.
inline Topology dualSocketHT() {
  return kubeletTopology(12, [](int cpu) {
    const int core = cpu % 6;
    return KubeletCpu{core, core % 2, core % 2};
  });
}

// Dual Xeon Gold 6230: 2 sockets x 2 NUMA nodes x 10 cores x 2 threads; siblings cpu and cpu+40.
inline Topology dualSocketMultiNumaPerSocketHT() {
  return kubeletTopology(80, [](int cpu) {
    const int core = cpu % 40;
    return KubeletCpu{core, core / 20, core / 10};
  });
}

// The same machine with sockets and NUMA nodes swapped: 4 sockets, 2 NUMA nodes of 2 sockets.
inline Topology multiSocketDualSocketPerNumaHT() {
  return kubeletTopology(80, [](int cpu) {
    const int core = cpu % 40;
    return KubeletCpu{core, core / 10, core / 20};
  });
}

}  // namespace vri::testing
