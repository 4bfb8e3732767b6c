// Typed cgroup values with strict parse/format for both cgroup versions, and
// the conversions between them and from Kubernetes quantities.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vri {

// cgroup v1 cpu.shares. The kernel keeps it in [2, 262144].
struct CpuShares {
  static constexpr uint64_t kMin = 2, kMax = 262144, kDefault = 1024;
  uint64_t value = kDefault;

  static Result<CpuShares> parse(std::string_view text);
  std::string format() const { return std::to_string(value); }
  friend bool operator==(const CpuShares&, const CpuShares&) = default;
};

// cgroup v2 cpu.weight, in [1, 10000].
struct CpuWeight {
  static constexpr uint64_t kMin = 1, kMax = 10000, kDefault = 100;
  uint64_t value = kDefault;

  static Result<CpuWeight> parse(std::string_view text);
  std::string format() const { return std::to_string(value); }
  friend bool operator==(const CpuWeight&, const CpuWeight&) = default;
};

// shares -> weight with the quadratic mapping runc 1.2 and crun use (and
// kubelet relies on since): it maps 2 -> 1, 1024 -> 100 and 262144 -> 10000,
// so the v1 default lands on the v2 default. The older linear mapping
// 1 + (shares - 2) * 9999 / 262142 turned the default 1024 into 39 and
// starved v2 containers next to anything left at the default weight.
CpuWeight sharesToWeight(CpuShares shares);
// The inverse of sharesToWeight, rounded to the nearest share.
CpuShares weightToShares(CpuWeight weight);
// The old linear mapping, for reading what older runtimes wrote.
CpuWeight sharesToWeightLinear(CpuShares shares);

// A CFS bandwidth limit: v1 cpu.cfs_quota_us + cpu.cfs_period_us, v2 cpu.max.
struct CpuMax {
  static constexpr int64_t kMinQuotaUs = 1000;
  static constexpr uint64_t kMinPeriodUs = 1000, kMaxPeriodUs = 1000000, kDefaultPeriodUs = 100000;
  std::optional<int64_t> quotaUs;  // nullopt: unlimited
  uint64_t periodUs = kDefaultPeriodUs;

  // v2 "max 100000", "50000 100000", or "50000" (period left unchanged).
  static Result<CpuMax> parseV2(std::string_view text);
  std::string formatV2() const;
  // v1 files: quota "-1" or microseconds, period microseconds.
  static Result<CpuMax> parseV1(std::string_view quota, std::string_view period);
  std::string formatV1Quota() const { return quotaUs ? std::to_string(*quotaUs) : "-1"; }
  std::string formatV1Period() const { return std::to_string(periodUs); }
  friend bool operator==(const CpuMax&, const CpuMax&) = default;
};

// A memory, hugetlb or pids limit: a number, or unlimited.
struct Limit {
  std::optional<uint64_t> value;  // nullopt: unlimited

  // v2 "max" or a number.
  static Result<Limit> parseV2(std::string_view text);
  std::string formatV2() const { return value ? std::to_string(*value) : "max"; }
  // v1 memory files: a number, "-1", or the kernel's unlimited value
  // (PAGE_COUNTER_MAX pages, 9223372036854771712 with 4 KiB pages).
  static Result<Limit> parseV1Memory(std::string_view text);
  std::string formatV1Memory() const { return value ? std::to_string(*value) : "-1"; }
  friend bool operator==(const Limit&, const Limit&) = default;
};

// kubelet's conversions from CPU milli-units.
CpuShares milliCpuToShares(int64_t milli);
// The inverse: the smallest milli-CPU kubelet turns into `shares` (7 shares are
// 7m, not 6m); 2 shares or fewer are no request (0).
int64_t milliCpuFromShares(CpuShares shares);
// Quota for a limit at a period; kubelet's minimum of 1000 µs applies. nullopt for no limit (0).
std::optional<int64_t> milliCpuToQuota(int64_t milli, uint64_t periodUs);

// The kernel's name for a hugepage size in hugetlb file names: "2MB", "1GB", "64KB".
std::string hugepageSizeName(uint64_t bytes);

}  // namespace vri
