// The ledger's placement policy as vrid's configuration says it: what vrid starts the ledger with, and
// what a new configuration would change (vri/config_diff.h).
#pragma once

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "vri/daemon_config.h"

namespace vri {

LedgerConfig ledgerConfigOf(const DaemonConfig& config, const NodeAllocatable& allocatable);

}  // namespace vri
