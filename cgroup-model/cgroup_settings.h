// The values VRI wants in one cgroup, independent of the cgroup version.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "base/cpuset.h"
#include "cgroup-model/cgroup_values.h"

namespace vri {

struct CgroupSettings {
  std::optional<CpuSet> cpus;  // cpuset.cpus
  std::optional<CpuSet> mems;  // cpuset.mems (NUMA node ids)
  // v2 only, cpuset partitions (Linux 6.7+): the CPUs this cgroup may hand to a partition at or
  // below it (cpuset.cpus.exclusive), and whether it is a `root` partition or a `member`
  // (cpuset.cpus.partition). A root partition's CPUs leave the effective set of every cgroup outside it.
  std::optional<CpuSet> cpusExclusive;
  std::optional<bool> partitionRoot;
  std::optional<CpuShares> shares;  // v1 cpu.shares; v2 cpu.weight through sharesToWeight
  std::optional<CpuMax> cpuMax;
  std::optional<Limit> memoryMax;
  std::optional<uint64_t> memoryMin;     // v2 only: v1 has no memory protection
  std::optional<uint64_t> memoryLow;     // v2 only
  std::map<uint64_t, Limit> hugetlbMax;  // page size in bytes -> limit in bytes
  std::optional<Limit> pidsMax;

  friend bool operator==(const CgroupSettings&, const CgroupSettings&) = default;

  bool empty() const {
    return !cpus && !mems && !cpusExclusive && !partitionRoot && !shares && !cpuMax && !memoryMax && !memoryMin &&
           !memoryLow && hugetlbMax.empty() && !pidsMax;
  }
};

}  // namespace vri
