// The values VRI wants in one cgroup, independent of the cgroup version.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "cgroup-model/cgroup_values.h"
#include "cgroup-model/cpuset.h"

namespace vri {

struct CgroupSettings {
  std::optional<CpuSet> cpus;       // cpuset.cpus
  std::optional<CpuSet> mems;       // cpuset.mems (NUMA node ids)
  std::optional<CpuShares> shares;  // v1 cpu.shares; v2 cpu.weight through sharesToWeight
  std::optional<CpuMax> cpuMax;
  std::optional<Limit> memoryMax;
  std::optional<uint64_t> memoryMin;     // v2 only: v1 has no memory protection
  std::optional<uint64_t> memoryLow;     // v2 only
  std::map<uint64_t, Limit> hugetlbMax;  // page size in bytes -> limit in bytes
  std::optional<Limit> pidsMax;

  friend bool operator==(const CgroupSettings&, const CgroupSettings&) = default;

  bool empty() const {
    return !cpus && !mems && !shares && !cpuMax && !memoryMax && !memoryMin && !memoryLow && hugetlbMax.empty() &&
           !pidsMax;
  }
};

}  // namespace vri
