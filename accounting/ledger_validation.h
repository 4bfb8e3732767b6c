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
  std::vector<std::string> waiting;     // admitted VMs whose QEMU is not running (yet): kept
};

// Releases tenants whose cgroups are gone (pods, containers by runtime id)
// and adopts running tenants the ledger does not know, with the
// CPUs they hold now. The shared pool is read off the node — the cpuset most
// containers and vCPU groups share — and a container or vCPU confined to
// fewer CPUs than that is taken as exclusive. What cannot be adopted is reported.
// An admitted VM without a running QEMU is kept: libvirt admits a VM at
// `prepare` and starts QEMU after it, so a restart in that window must not
// release it. vrid's periodic reconcile releases it once it has been missing
// for the release grace, as it does any tenant.
ValidationReport validateLedger(Ledger& ledger, const NodeScan& scan);

}  // namespace vri
