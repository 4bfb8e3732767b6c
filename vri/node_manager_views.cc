// NodeManager's views for vrictl: nothing here decides or writes.
#include "vri/node_manager.h"

namespace vri {

CapacityBooks NodeManager::capacity() const {
  const NodeFacts node = facts();
  const StatePtr now = state();
  return capacityBooks(*now,
                       {node.allocatable, ledger_.config().sharedVcpuMilli, ledger_.config().vmMemoryOverheadBytes});
}

Result<TreeView> NodeManager::tree(bool compareKernel) {
  if (!compareKernel) {
    const StatePtr now = state();
    return sync_.view(*now, false);
  }
  Ledger::Writer writer(ledger_);
  const StatePtr now = writer.current();
  return sync_.view(*now, true);
}

}  // namespace vri
