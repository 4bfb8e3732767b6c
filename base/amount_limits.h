// The largest amounts any node could ever hold, and checks that refuse more.
//
// Every CPU and memory amount that reaches VRI from outside (the API, the
// hook, the shim, a ledger file) is checked against these ceilings where it
// enters. Below them, every sum VRI keeps (a pod's requests, the shared
// demand, admitted memory) stays far inside int64 and uint64, and every value
// derived from them (cpu.shares, a CFS quota, memory.max) can be written: so
// nothing is committed that the kernel would refuse or that would wrap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

// Linux's NR_CPUS ceiling, and CpuSet's: no node has more CPUs.
inline constexpr int64_t kMaxCpuMilli = int64_t{CpuSet::kMaxCpus} * 1000;
// 2^52 bytes (4 PiB): the physical address space of x86-64 and arm64, even with 5-level paging.
inline constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 52;
// KVM's ceiling for a guest's vCPUs (KVM_MAX_VCPUS on x86-64).
inline constexpr int kMaxVmVcpus = 4096;
// The kernel's ceiling for a CFS period (cpu.cfs_period_us, cpu.max): one second.
inline constexpr int64_t kMaxCfsPeriodUs = 1000000;

// "<field>: <value> is beyond what any node holds (<ceiling>)" when out of [0, ceiling].
Result<void> checkMilliCpu(std::string_view field, int64_t milli);
Result<void> checkMemoryBytes(std::string_view field, uint64_t bytes);

// a + b, or an error naming `what` when the sum would pass `ceiling` (or wrap).
Result<uint64_t> addBytes(std::string_view what, uint64_t a, uint64_t b, uint64_t ceiling = kMaxMemoryBytes);

// Whether `current + more <= limit` without computing a sum that could wrap.
inline bool fitsWithin(int64_t current, int64_t more, int64_t limit) {
  return more <= limit && current <= limit - more;
}
inline bool fitsWithin(uint64_t current, uint64_t more, uint64_t limit) {
  return more <= limit && current <= limit - more;
}

}  // namespace vri
