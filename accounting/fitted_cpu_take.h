// VRI's own choice of exclusive CPUs: NUMA best fit with SMT siblings kept together.
#pragma once

#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// Chooses `count` CPUs of `available`:
// - inside one NUMA node when one can hold them, picking the node that keeps
//   SMT siblings together and, among those, the one left with the fewest free
//   CPUs (best fit), so that large free holes survive for large requests;
// - otherwise on the fewest NUMA nodes, within one package when possible;
// - inside a node, whole free cores from the L3 group they fit best, and an
//   odd CPU from a core whose sibling is already taken, so no new core is split.
Result<CpuSet> takeFitted(const Topology& topology, const CpuSet& available, int count);

}  // namespace vri
