// The node's CPU pools before any tenant is placed: reserved, shared, and
// the CPUs that may be handed out exclusively.
#pragma once

#include <optional>

#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

struct ReservedCpusConfig {
  // `reserved-cpus`: an explicit set. Takes the place of reservedCount.
  std::optional<CpuSet> cpus;
  // Otherwise this many CPUs, chosen by topology as kubelet chooses them.
  int count = 0;
  // `strict-cpu-reservation`: keep the reserved CPUs out of the shared pool.
  bool strict = false;
};

struct CpuPools {
  CpuSet reserved;
  CpuSet shared;      // where shared tenants run while nothing is exclusive
  CpuSet assignable;  // online minus reserved: what exclusive requests may take
};

// kubelet's choice of `count` reserved CPUs: its packed choice on an idle
// node, which takes whole packages while the count covers one, then whole
// NUMA nodes, then whole cores, then single threads, lowest-numbered first.
Result<CpuSet> chooseReservedCpus(const Topology& topology, int count);

// Refuses reserved CPUs that are not online, a count larger than the machine,
// setting both forms, and a strict reservation that leaves no shared CPU.
Result<CpuPools> computeCpuPools(const Topology& topology, const ReservedCpusConfig& config);

}  // namespace vri
