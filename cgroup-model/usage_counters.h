// What a cgroup's usage files say, parsed, for both cgroup versions:
//
//   counter              v1 (hierarchy: file)                       v2 (file)
//   CPU time             cpuacct: cpuacct.usage (ns)                cpu.stat usage_usec
//   periods, throttled   cpu: cpu.stat nr_periods, nr_throttled     cpu.stat nr_periods, nr_throttled
//   throttled time       cpu: cpu.stat throttled_time (ns)          cpu.stat throttled_usec
//   memory in use        memory: memory.usage_in_bytes              memory.current
//
// and each CPU's busy and total time from /proc/stat. Everything in nanoseconds and bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vri {

struct CpuCounters {
  uint64_t usageNs = 0;
  uint64_t periods = 0;           // enforcement periods of a CPU limit that elapsed with the cgroup runnable
  uint64_t throttledPeriods = 0;  // those in which it ran out of quota
  uint64_t throttledNs = 0;       // how long it was held back in all
};

// v2 cpu.stat: every field above (a cgroup without the cpu controller has usage_usec only).
Result<CpuCounters> parseCpuStatV2(std::string_view text);
// v1 cpu.stat: the throttling fields; usageNs stays 0 (it is cpuacct.usage's).
Result<CpuCounters> parseCpuStatV1(std::string_view text);
// A file of one unsigned number: cpuacct.usage, memory.current, memory.usage_in_bytes.
Result<uint64_t> parseCounterFile(std::string_view text);

// One CPU's line of /proc/stat in nanoseconds: busy is everything but idle and iowait.
struct CpuTime {
  int cpu = 0;
  uint64_t busyNs = 0;
  uint64_t totalNs = 0;
};
// The "cpuN" lines of /proc/stat (not the "cpu" total), in the order given; `ticksPerSecond` is
// USER_HZ (sysconf(_SC_CLK_TCK)).
Result<std::vector<CpuTime>> parseProcStat(std::string_view text, long ticksPerSecond);

}  // namespace vri
