// Command line of vri-topology: which topology to read and how to reserve CPUs.
#pragma once

#include <string>
#include <vector>

#include "accounting/cpu_pools.h"
#include "base/result.h"

namespace vri {

struct TopologyCommand {
  std::string source = "live";  // live | xml:<path> | synthetic:<description>
  ReservedCpusConfig reserved;
  bool help = false;
};

// Flags (CLI11): --topology SOURCE, --reserved-cpus LIST, --reserved-cpu-count N,
// --strict-cpu-reservation, --help. Values may also follow '='.
Result<TopologyCommand> parseTopologyCommand(const std::vector<std::string>& args);
// What --help prints, from the same declarations.
std::string topologyUsage();

}  // namespace vri
