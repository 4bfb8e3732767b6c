// What kubelet's checkpoints hold for a node VRI hands back: its CPU manager's from the exclusive
// CPUs in the ledger, its memory manager's from the pods' memory, each as kubelet would have written
// it had it placed those pods itself. Pure: the ledger's state and kubelet's configuration in, the
// checkpoints (or the reason kubelet could not take the node as it is) out.
#pragma once

#include "accounting/ledger_state.h"
#include "vri/kubelet_checkpoint.h"
#include "vri/kubelet_config.h"
#include "vri/kubelet_memory_checkpoint.h"

namespace vri {

// Each exclusive container's CPUs under its pod's UID and its name, every other online CPU in the
// default set (the reserved CPUs among them, as kubelet's static policy keeps them). Refused while
// a VM holds exclusive CPUs (kubelet's checkpoint has no place for them, and its static policy would
// hand them to pods), while CPUs wait for cgroup writes, and when `kubelet` (the configuration
// kubelet will start with, if known) reserves CPUs a container holds.
Result<CpuManagerCheckpoint> cpuCheckpointOf(const LedgerState& state, const KubeletSettings* kubelet);

// Every container of a Guaranteed pod in kubelet's tree, as kubelet's static memory policy assigns
// them: its memory limit and each hugepage limit, on the NUMA nodes VRI pinned it to (all of them
// when it is not pinned); the machine state for those against the node's memory and `kubelet`'s
// reservedMemory. Refused when the reservation does not add up to what kubelet's node allocatable
// holds back (kubelet would not start), or a container's memory limit is not known.
Result<MemoryManagerCheckpoint> memoryCheckpointOf(const LedgerState& state, const KubeletSettings& kubelet);

}  // namespace vri
