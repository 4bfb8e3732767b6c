// Range checks of a tenant's amounts against what any node could ever hold
// (base/amount_limits.h). The ledger runs them on every decision that
// takes a spec, and on every record it loads, so no caller (the API, the
// start-up adoption, a tool, an old ledger file) can bring in an amount whose
// sums or cgroup values would wrap. Errors name the API's field.
#pragma once

#include "accounting/ledger_records.h"
#include "base/result.h"

namespace vri {

Result<void> checkPodAmounts(const PodSpec& pod);
Result<void> checkContainerAmounts(const ContainerSpec& container);
// vcpus, memory_bytes, hugepage_size, strict_numa_nodes and each memory part's
// bytes, page size and nodes (their sum is validateMemoryParts').
Result<void> checkVmAmounts(const VmSpec& vm);

}  // namespace vri
