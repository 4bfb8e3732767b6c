// What a change of VRI's placement policy (a new LedgerConfig: the reserved CPUs, the topology
// manager, the exclusive-CPU options, memory pinning) would do to every tenant the ledger holds now.
// Worked out on a copy of the books, as the new policy would load and decide them: a tenant whose
// placement the new policy keeps stays; one it would not keep (its CPUs now reserved, its NUMA span
// against single-numa-node) moves where the new policy would place it now, or breaks the new policy
// when nothing can hold it. Nothing is written: the plan is what `vrictl config diff` shows and what
// an apply carries out.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "accounting/ledger.h"

namespace vri {

struct TenantChange {
  enum class Verdict { kMoves, kBreaks };
  Verdict verdict = Verdict::kMoves;
  std::string tenant;  // "pod/<uid>/<container>" or "vm/<uuid>"
  std::string name;    // for people: "default/web app", "VM db"
  CpuSet cpusBefore;   // its exclusive CPUs now
  CpuSet cpusAfter;    // ... under the new policy (kMoves)
  CpuSet memsBefore;   // the NUMA nodes its memory is bound to now; empty: every node
  CpuSet memsAfter;
  std::string reason;  // why the new policy does not keep it where it is (and, kBreaks, why nothing can hold it)
};

struct ConfigChangePlan {
  CpuSet reservedBefore, reservedAfter;
  CpuSet sharedBefore, sharedAfter;  // the shared pool, before and once every move is made
  int stays = 0;                     // tenants with exclusive CPUs or bound memory that keep them
  std::vector<TenantChange> changes;
  // The ledger under the new policy once every move is made (its records; no runtime knowledge such as
  // where VMs' cgroups are): what an apply commits and publishes.
  StatePtr after;
};

Result<ConfigChangePlan> planConfigChange(const LedgerState& now, std::shared_ptr<const Topology> topology,
                                          const LedgerConfig& next);

}  // namespace vri
