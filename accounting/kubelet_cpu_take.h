// kubelet's static-policy CPU choice, as its cpumanager implements it:
// takeByTopologyNUMAPacked (with prefer-align-cpus-by-uncorecache) and
// takeByTopologyNUMADistributed (distribute-cpus-across-numa, with
// align-by-socket). VRI keeps this behaviour as its floor and as the
// reference its own placement is measured against.
#pragma once

#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// Whole packages or NUMA nodes (the larger unit first) when the request is
// that big, then (optionally) whole L3 groups or the fewest L3 groups, then
// whole cores, then single threads; each level ordered by fewest free CPUs,
// then lowest id.
Result<CpuSet> takePacked(const Topology& topology, const CpuSet& available, int count, bool preferAlignByUncoreCache);

// Spreads the request evenly over the fewest NUMA nodes that can take equal
// shares of `groupSize` CPUs, balancing what stays free; falls back to
// takePacked when no such split exists or count is not a multiple of groupSize.
Result<CpuSet> takeDistributed(const Topology& topology, const CpuSet& available, int count, int groupSize,
                               bool alignBySocket);

}  // namespace vri
