// The start-up check of the ledger against the node as it runs.
#pragma once

#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "cgroup-model/node_scan.h"

namespace vri {

struct ValidationReport {
  std::vector<std::string> released;    // tenants whose cgroups are gone, released
  std::vector<std::string> adopted;     // tenants found running, adopted
  std::vector<std::string> unresolved;  // what needs a person, with the reason
};

// Releases tenants whose cgroups are gone (pods, containers by runtime id,
// VMs by UUID) and adopts running tenants the ledger does not know, with the
// CPUs they hold now. The shared pool is read off the node — the cpuset most
// containers and vCPU groups share — and a container or vCPU confined to
// fewer CPUs than that is taken as exclusive. What cannot be adopted is reported.
ValidationReport validateLedger(Ledger& ledger, const NodeScan& scan);

}  // namespace vri
