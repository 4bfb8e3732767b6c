// Topology: the node's CPUs and memory as a plain value.
//
// Built from a TopologyDescription, which lists every online CPU with its
// core, package, NUMA node and L3 group, plus the NUMA nodes' memory. The
// hwloc loader produces descriptions of real machines; tests may also write
// one literally. Topology derives the packages, NUMA nodes, L3 groups and
// cores from it and answers lookups in constant time.
//
// Ids: CPU ids are the kernel's (what cpuset.cpus holds), NUMA node ids are
// the kernel's (what cpuset.mems holds), package ids are physical package
// ids, core and L3 ids are unique across the machine.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// Where one online CPU sits.
struct CpuLocation {
  int cpu = 0;
  int core = 0;
  int package = 0;
  int numaNode = 0;
  int l3 = -1;  // -1: the machine reports no L3 cache
};

struct NumaNodeMemory {
  int node = 0;
  int package = -1;  // -1: not inside a package (e.g. a CPU-less memory expander)
  uint64_t memoryBytes = 0;
  std::map<uint64_t, uint64_t> hugepages;  // page size in bytes -> number of pages
};

struct TopologyDescription {
  std::vector<CpuLocation> cpus;          // the online CPUs, any order
  std::vector<NumaNodeMemory> numaNodes;  // every NUMA node, including those without CPUs
  // distances[i][j] between numaNodes[i] and numaNodes[j] (ACPI SLIT units:
  // 10 is local). Empty when the machine reports none.
  std::vector<std::vector<uint32_t>> distances;
  CpuSet offlineCpus;  // CPUs the machine has but that are not online
  std::string source;  // where it came from, for display ("synthetic pack:2 ...")
};

struct Package {
  int id = 0;
  CpuSet cpus;
  std::vector<int> numaNodes;  // ids, ascending
  std::vector<int> cores;      // ids, ascending
};

struct NumaNode {
  int id = 0;
  int package = -1;
  CpuSet cpus;  // empty for a CPU-less node
  uint64_t memoryBytes = 0;
  std::map<uint64_t, uint64_t> hugepages;
  std::vector<int> cores;
};

struct L3Group {
  int id = 0;
  int package = 0;
  CpuSet cpus;
};

struct Core {
  int id = 0;
  int package = 0;
  int numaNode = 0;
  int l3 = -1;
  CpuSet cpus;  // its SMT threads; one CPU on a machine without SMT
};

class Topology {
 public:
  // Validates the description: CPU ids unique and below CpuSet::kMaxCpus,
  // offline CPUs disjoint from online ones, each core within one package and
  // NUMA node, every NUMA node a CPU names described, distances square.
  static Result<Topology> create(TopologyDescription description);

  const std::vector<Package>& packages() const { return packages_; }
  const std::vector<NumaNode>& numaNodes() const { return numaNodes_; }
  const std::vector<L3Group>& l3Groups() const { return l3Groups_; }
  const std::vector<Core>& cores() const { return cores_; }
  // Every online CPU, ascending by id.
  const std::vector<CpuLocation>& cpus() const { return cpus_; }

  // Lookups by id; nullptr when there is no such object.
  const CpuLocation* cpu(int id) const;
  const Core* core(int id) const;
  const NumaNode* numaNode(int id) const;
  const Package* package(int id) const;
  const L3Group* l3Group(int id) const;

  const CpuSet& onlineCpus() const { return onlineCpus_; }
  const CpuSet& offlineCpus() const { return offlineCpus_; }
  // The SMT siblings of `cpu` including itself; empty for an unknown CPU.
  CpuSet siblings(int cpu) const;

  // The largest number of threads on one core (1 without SMT).
  int maxThreadsPerCore() const { return maxThreadsPerCore_; }
  // True when every core has the same number of threads.
  bool uniformSmt() const { return uniformSmt_; }

  // NUMA distance between two node ids. When the machine reported no matrix,
  // a conventional one is used: 10 local, 11 within a package, 21 across.
  uint32_t distance(int fromNode, int toNode) const;
  bool distancesFromMachine() const { return distancesFromMachine_; }

  uint64_t totalMemoryBytes() const;
  const std::string& source() const { return source_; }

 private:
  Topology() = default;

  std::vector<Package> packages_;
  std::vector<NumaNode> numaNodes_;
  std::vector<L3Group> l3Groups_;
  std::vector<Core> cores_;
  std::vector<CpuLocation> cpus_;
  // id -> position in the vectors above, -1 when absent (ids are small).
  std::vector<int> cpuIndex_, coreIndex_, numaIndex_, packageIndex_, l3Index_;
  std::vector<std::vector<uint32_t>> distances_;  // by position in numaNodes_
  bool distancesFromMachine_ = false;
  CpuSet onlineCpus_;
  CpuSet offlineCpus_;
  int maxThreadsPerCore_ = 1;
  bool uniformSmt_ = true;
  std::string source_;
};

}  // namespace vri
