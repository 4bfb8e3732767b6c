// The one entry point for choosing exclusive CPUs: applies full-pcpus-only and
// a NUMA preference, then VRI's fitted choice or kubelet's.
#pragma once

#include "accounting/cpu_take_options.h"
#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// The CPUs of `available` that belong to cores whose every thread is in `available`.
CpuSet wholeFreeCoreCpus(const Topology& topology, const CpuSet& available);

// Chooses request.count CPUs of `available`. Refusals (nothing is chosen):
// INVALID_ARGUMENT for an SMT-alignment error under full-pcpus-only,
// RESOURCE_EXHAUSTED when the free CPUs (or whole cores) are too few; the
// message gives the numbers.
Result<CpuSet> takeCpus(const Topology& topology, const CpuSet& available, const CpuTakeRequest& request,
                        const CpuTakeOptions& options);

}  // namespace vri
