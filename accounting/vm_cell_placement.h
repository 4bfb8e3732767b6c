// A dedicated VM's guest NUMA cells placed one by one: each cell's vCPUs and
// memory on one host node, so that the guest's NUMA layout is the host's.
// Used where VRI chooses (no <memnode>, no user pins, no isolated helper
// threads); the nodes chosen are written back as <memnode>s.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "accounting/ledger_records.h"
#include "accounting/numa_memory.h"
#include "accounting/topology.h"

namespace vri {

struct CellPlacement {
  VmCpuPlacement cpus;            // every cell's, merged
  std::map<int, int> nodeOfCell;  // guest cell id -> host NUMA node
};

// Whether `vm` is placed cell by cell: more than one cell, some dedicated vCPUs,
// and nothing that already says where its CPUs or memory go.
bool placesCellByCell(const VmSpec& vm, const std::vector<int>& dedicatedVcpus);

// Nullopt when some cell fits on no single node with the others placed (the
// caller then places the VM as a whole and claims no per-cell alignment).
std::optional<CellPlacement> placeCellsOnNodes(const Topology& topology, const CpuSet& free, const NumaMemory& numa,
                                               const VmSpec& vm, const std::vector<int>& dedicatedVcpus,
                                               const CpuTakeOptions& options);

}  // namespace vri
