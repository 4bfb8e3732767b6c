// vri-topology: prints the topology VRI discovers and the CPU pools it would keep.
#include <cstdio>
#include <string>
#include <vector>

#include "accounting/cpu_pools.h"
#include "accounting/hwloc_topology.h"
#include "base/version.h"
#include "vri/topology_command.h"
#include "vri/topology_report.h"

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-topology")) return 0;
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto command = vri::parseTopologyCommand(args);
  if (!command.ok()) {
    std::fprintf(stderr, "vri-topology: %s\nRun with --help for more information.\n",
                 command.error().message().c_str());
    return 2;
  }
  if (command->help) {
    std::fputs(vri::topologyUsage().c_str(), stdout);
    return 0;
  }
  auto topology = vri::loadTopology(command->source);
  if (!topology.ok()) {
    std::fprintf(stderr, "vri-topology: %s\n", topology.error().message().c_str());
    return 1;
  }
  auto pools = vri::computeCpuPools(*topology, command->reserved);
  if (!pools.ok()) {
    std::fprintf(stderr, "vri-topology: %s\n", pools.error().message().c_str());
    return 1;
  }
  std::fputs(vri::formatTopology(*topology).c_str(), stdout);
  std::fputs("\n", stdout);
  std::fputs(vri::formatCpuPools(*pools, command->reserved.strict).c_str(), stdout);
  return 0;
}
