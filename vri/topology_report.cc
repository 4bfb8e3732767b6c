#include "vri/topology_report.h"

#include <array>
#include <cstdio>
#include <sstream>

namespace vri {

namespace {

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string cpuList(const CpuSet& cpus) { return cpus.empty() ? "none" : cpus.format(); }

std::string hugepageSummary(const std::map<uint64_t, uint64_t>& hugepages) {
  if (hugepages.empty()) return "";
  std::string text = ", hugepages";
  bool first = true;
  for (const auto& [size, count] : hugepages) {
    text += first ? " " : ", ";
    text += formatBytes(size) + " x " + std::to_string(count);
    first = false;
  }
  return text;
}

void printNumaNode(std::ostringstream& out, const Topology& topology, const NumaNode& node, const char* indent) {
  out << indent << "NUMA node " << node.id << ": ";
  out << (node.cpus.empty() ? std::string("no CPUs") : "CPUs " + node.cpus.format());
  out << ", memory " << formatBytes(node.memoryBytes) << hugepageSummary(node.hugepages) << "\n";
  for (int core_id : node.cores) {
    const Core& core = *topology.core(core_id);
    out << indent << "  core " << core.id << ": CPU" << (core.cpus.count() > 1 ? "s " : " ") << core.cpus.format();
    if (core.l3 >= 0) out << "  (L3 " << core.l3 << ")";
    out << "\n";
  }
}

}  // namespace

std::string formatBytes(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t unit = 0;
  uint64_t whole = bytes;
  while (unit + 1 < kUnits.size() && whole >= 1024) {
    whole /= 1024;
    ++unit;
  }
  const double scaled = static_cast<double>(bytes) / static_cast<double>(uint64_t{1} << (10 * unit));
  char text[48];
  if (scaled == static_cast<double>(whole)) {
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(whole), kUnits[unit]);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", scaled, kUnits[unit]);
  }
  return text;
}

std::string formatTopology(const Topology& topology) {
  std::ostringstream out;
  const int online = topology.onlineCpus().count();
  out << "Topology: " << topology.source() << "\n";
  out << "  " << plural(static_cast<int>(topology.packages().size()), "package", "packages") << ", "
      << plural(static_cast<int>(topology.numaNodes().size()), "NUMA node", "NUMA nodes") << ", "
      << plural(static_cast<int>(topology.l3Groups().size()), "L3 group", "L3 groups") << ", "
      << plural(static_cast<int>(topology.cores().size()), "core", "cores") << ", " << plural(online, "CPU", "CPUs")
      << " online";
  if (!topology.offlineCpus().empty()) out << ", " << topology.offlineCpus().count() << " offline";
  out << "\n  threads per core: " << topology.maxThreadsPerCore()
      << (topology.uniformSmt() ? "" : " (not on every core)") << ", memory "
      << formatBytes(topology.totalMemoryBytes()) << "\n\n";

  for (const Package& package : topology.packages()) {
    out << "Package " << package.id << ": CPUs " << cpuList(package.cpus) << "\n";
    for (const L3Group& group : topology.l3Groups()) {
      if (group.package == package.id) out << "  L3 " << group.id << ": CPUs " << group.cpus.format() << "\n";
    }
    for (int node_id : package.numaNodes) printNumaNode(out, topology, *topology.numaNode(node_id), "  ");
  }
  for (const NumaNode& node : topology.numaNodes()) {
    if (node.package < 0) printNumaNode(out, topology, node, "");
  }
  if (!topology.offlineCpus().empty()) out << "Offline CPUs: " << topology.offlineCpus().format() << "\n";

  out << "\nNUMA distances (" << (topology.distancesFromMachine() ? "from the machine" : "conventional: none reported")
      << "):\n     ";
  for (const NumaNode& to : topology.numaNodes()) {
    char cell[16];
    std::snprintf(cell, sizeof cell, "%5d", to.id);
    out << cell;
  }
  out << "\n";
  for (const NumaNode& from : topology.numaNodes()) {
    char cell[16];
    std::snprintf(cell, sizeof cell, "%4d:", from.id);
    out << cell;
    for (const NumaNode& to : topology.numaNodes()) {
      std::snprintf(cell, sizeof cell, "%5u", topology.distance(from.id, to.id));
      out << cell;
    }
    out << "\n";
  }
  return out.str();
}

std::string formatCpuPools(const CpuPools& pools, bool strict) {
  std::ostringstream out;
  out << "CPU pools\n";
  out << "  reserved:   " << cpuList(pools.reserved) << " (" << plural(pools.reserved.count(), "CPU", "CPUs") << ")\n";
  out << "  shared:     " << cpuList(pools.shared) << " (" << plural(pools.shared.count(), "CPU", "CPUs")
      << (strict ? "; reserved CPUs kept out: strict-cpu-reservation" : "; reserved CPUs included") << ")\n";
  out << "  exclusive:  none assigned; " << plural(pools.assignable.count(), "CPU", "CPUs") << " can be assigned ("
      << cpuList(pools.assignable) << ")\n";
  return out.str();
}

}  // namespace vri
