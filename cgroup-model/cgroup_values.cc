#include "cgroup-model/cgroup_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "base/quote.h"

namespace vri {

namespace {

template <typename T>
Result<T> parseInteger(std::string_view text, std::string_view what) {
  T value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Error::invalidArgument("invalid " + std::string(what) + " " + quoteForMessage(text));
  }
  return value;
}

Result<uint64_t> parseUnsigned(std::string_view text, std::string_view what) {
  return parseInteger<uint64_t>(text, what);
}
Result<int64_t> parseSigned(std::string_view text, std::string_view what) { return parseInteger<int64_t>(text, what); }

Result<uint64_t> parsePeriod(std::string_view text) {
  VRI_ASSIGN_OR_RETURN(uint64_t period, parseUnsigned(text, "CFS period"));
  if (period < CpuMax::kMinPeriodUs || period > CpuMax::kMaxPeriodUs) {
    return Error::invalidArgument("CFS period " + std::to_string(period) + " µs is outside [1000, 1000000]");
  }
  return period;
}

Result<std::optional<int64_t>> checkQuota(int64_t quota) {
  if (quota < CpuMax::kMinQuotaUs) {
    return Error::invalidArgument("CFS quota " + std::to_string(quota) + " µs is below the minimum of 1000");
  }
  return std::optional<int64_t>(quota);
}

// The unlimited value v1 memory files read back (PAGE_COUNTER_MAX * 4096).
constexpr uint64_t kV1MemoryUnlimited = 9223372036854771712ULL;

}  // namespace

Result<CpuShares> CpuShares::parse(std::string_view text) {
  VRI_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(text, "cpu.shares"));
  if (value < kMin || value > kMax) {
    return Error::invalidArgument("cpu.shares " + std::to_string(value) + " is outside [2, 262144]");
  }
  return CpuShares{value};
}

Result<CpuWeight> CpuWeight::parse(std::string_view text) {
  VRI_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(text, "cpu.weight"));
  if (value < kMin || value > kMax) {
    return Error::invalidArgument("cpu.weight " + std::to_string(value) + " is outside [1, 10000]");
  }
  return CpuWeight{value};
}

CpuWeight sharesToWeight(CpuShares shares) {
  if (shares.value <= CpuShares::kMin) return {CpuWeight::kMin};
  if (shares.value >= CpuShares::kMax) return {CpuWeight::kMax};
  const double l = std::log2(static_cast<double>(shares.value));
  const double exponent = (l * l + 125 * l) / 612.0 - 7.0 / 34.0;
  const auto weight = static_cast<uint64_t>(std::ceil(std::pow(10.0, exponent) - 1e-9));
  return {std::clamp<uint64_t>(weight, CpuWeight::kMin, CpuWeight::kMax)};
}

CpuShares weightToShares(CpuWeight weight) {
  if (weight.value <= CpuWeight::kMin) return {CpuShares::kMin};
  if (weight.value >= CpuWeight::kMax) return {CpuShares::kMax};
  // Solve l^2 + 125 l - 612 (log10(w) + 7/34) = 0 for l = log2(shares).
  const double e = std::log10(static_cast<double>(weight.value));
  const double l = (-125.0 + std::sqrt(125.0 * 125.0 + 4.0 * 612.0 * (e + 7.0 / 34.0))) / 2.0;
  const auto shares = static_cast<uint64_t>(std::llround(std::exp2(l)));
  return {std::clamp<uint64_t>(shares, CpuShares::kMin, CpuShares::kMax)};
}

CpuWeight sharesToWeightLinear(CpuShares shares) {
  const uint64_t clamped = std::clamp<uint64_t>(shares.value, CpuShares::kMin, CpuShares::kMax);
  return {1 + ((clamped - 2) * 9999) / 262142};
}

Result<CpuMax> CpuMax::parseV2(std::string_view text) {
  CpuMax max;
  const auto space = text.find(' ');
  const std::string_view quota = text.substr(0, space);
  if (quota != "max") {
    VRI_ASSIGN_OR_RETURN(int64_t value, parseSigned(quota, "cpu.max quota"));
    VRI_ASSIGN_OR_RETURN(max.quotaUs, checkQuota(value));
  }
  if (space != std::string_view::npos) {
    VRI_ASSIGN_OR_RETURN(max.periodUs, parsePeriod(text.substr(space + 1)));
  }
  return max;
}

std::string CpuMax::formatV2() const {
  return (quotaUs ? std::to_string(*quotaUs) : std::string("max")) + " " + std::to_string(periodUs);
}

Result<CpuMax> CpuMax::parseV1(std::string_view quota, std::string_view period) {
  CpuMax max;
  VRI_ASSIGN_OR_RETURN(max.periodUs, parsePeriod(period));
  VRI_ASSIGN_OR_RETURN(int64_t value, parseSigned(quota, "cpu.cfs_quota_us"));
  if (value != -1) {
    VRI_ASSIGN_OR_RETURN(max.quotaUs, checkQuota(value));
  }
  return max;
}

Result<Limit> Limit::parseV2(std::string_view text) {
  if (text == "max") return Limit{};
  VRI_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(text, "limit"));
  return Limit{value};
}

Result<Limit> Limit::parseV1Memory(std::string_view text) {
  if (text == "-1") return Limit{};
  VRI_ASSIGN_OR_RETURN(uint64_t value, parseUnsigned(text, "memory limit"));
  if (value >= kV1MemoryUnlimited) return Limit{};
  return Limit{value};
}

CpuShares milliCpuToShares(int64_t milli) {
  if (milli <= 0) return {CpuShares::kMin};
  // Past kMax's milli-CPU the answer is kMax; checked first so the product cannot wrap.
  if (milli >= static_cast<int64_t>(CpuShares::kMax) * 1000 / 1024 + 1) return {CpuShares::kMax};
  const uint64_t shares = static_cast<uint64_t>(milli) * 1024 / 1000;
  return {std::clamp<uint64_t>(shares, CpuShares::kMin, CpuShares::kMax)};
}

int64_t milliCpuFromShares(CpuShares shares) {
  if (shares.value <= CpuShares::kMin) return 0;
  const uint64_t value = std::min<uint64_t>(shares.value, CpuShares::kMax);
  return static_cast<int64_t>((value * 1000 + 1023) / 1024);
}

std::optional<int64_t> milliCpuToQuota(int64_t milli, uint64_t periodUs) {
  if (milli <= 0) return std::nullopt;
  // In 128 bits: callers check amounts where they enter, but a quota is never allowed to wrap.
  const __int128 quota = static_cast<__int128>(milli) * periodUs / 1000;
  if (quota > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  return std::max(static_cast<int64_t>(quota), CpuMax::kMinQuotaUs);
}

std::string hugepageSizeName(uint64_t bytes) {
  if (bytes >= (1ULL << 30) && bytes % (1ULL << 30) == 0) return std::to_string(bytes >> 30) + "GB";
  if (bytes >= (1ULL << 20) && bytes % (1ULL << 20) == 0) return std::to_string(bytes >> 20) + "MB";
  return std::to_string(bytes >> 10) + "KB";
}

}  // namespace vri
