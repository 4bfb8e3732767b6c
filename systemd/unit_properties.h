// The systemd unit properties that express a cgroup v2 control file's value.
//
// systemd re-applies a unit's properties to its cgroup on daemon-reload and on
// every property change, and writes the defaults for the ones never set: a
// value VRI writes only to the file is undone. Setting the property as well
// makes systemd write VRI's value from then on.
//
//   file          property (D-Bus type)                          value
//   cpuset.cpus   AllowedCPUs (ay)                               bitmask, CPU 8*i+j is bit j of byte i
//   cpuset.mems   AllowedMemoryNodes (ay)                        the same, of NUMA nodes
//   cpu.weight    CPUWeight (t)                                  1..10000
//   cpu.max       CPUQuotaPerSecUSec (t), CPUQuotaPeriodUSec (t)  quota * 1 s / period; "max": infinity
//   memory.max    MemoryMax (t)                                  bytes; "max": infinity
//   memory.min    MemoryMin (t), memory.low  MemoryLow (t)
//   pids.max      TasksMax (t)
// systemd has no property for hugetlb.*: it never writes those files, so they need none.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

struct UnitProperty {
  std::string name;
  std::variant<uint64_t, std::vector<uint8_t>> value;  // D-Bus "t" or "ay"

  std::string describe() const;  // "AllowedCPUs=0-3", "CPUWeight=100", "MemoryMax=infinity"
  friend bool operator==(const UnitProperty&, const UnitProperty&) = default;
};

// systemd's "infinity" for a "t" property.
inline constexpr uint64_t kUnitInfinity = UINT64_MAX;

// The bitmask systemd takes for AllowedCPUs and AllowedMemoryNodes; empty for an empty set
// (systemd then writes the file empty: the cgroup uses its parent's set).
std::vector<uint8_t> unitCpuMask(const CpuSet& cpus);
CpuSet cpusOfUnitMask(const std::vector<uint8_t>& mask);

// The properties for `value` written to the v2 control file `file`. Empty for a
// file systemd never writes; an error for a value the kernel would refuse too.
Result<std::vector<UnitProperty>> unitPropertiesFor(std::string_view file, std::string_view value);

}  // namespace vri
