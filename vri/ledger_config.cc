#include "vri/ledger_config.h"

namespace vri {

LedgerConfig ledgerConfigOf(const DaemonConfig& config, const NodeAllocatable& allocatable) {
  LedgerConfig ledger;
  ledger.pool.reserved = config.reservedCpus;
  // kubelet's static policy reserves ceil(system-reserved + kube-reserved) CPUs unless told which.
  if (!config.reservedCpus.cpus && config.reservedCpus.count == 0)
    ledger.pool.reserved.count = allocatable.reservedCpuCount;
  ledger.pool.take = config.take;
  ledger.allocatableMemoryBytes = allocatable.allocatableMemoryBytes;
  ledger.vmMemoryOverheadBytes = config.vmMemoryOverheadBytes;
  ledger.sharedVcpuMilli = config.sharedVcpuMilli;
  ledger.topologyManager = config.topologyManager;
  ledger.pinGuaranteedMemory = config.pinGuaranteedMemory;
  return ledger;
}

}  // namespace vri
