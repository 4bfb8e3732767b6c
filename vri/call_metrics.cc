#include "vri/call_metrics.h"

#include <algorithm>

namespace vri {

void LatencyHistogram::add(std::chrono::nanoseconds took) {
  const double seconds = std::chrono::duration<double>(took).count();
  const auto bucket = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds);
  if (bucket != kLatencyBuckets.end()) ++buckets[static_cast<size_t>(bucket - kLatencyBuckets.begin())];
  ++count;
  sumSeconds += seconds;
}

std::string_view clientProgram(std::string_view userAgent) {
  const std::string_view program = userAgent.substr(0, userAgent.find('/'));
  for (std::string_view known : {"vri-hook", "vri-cri-shim", "vri-nri-plugin", "vrictl"})
    if (program == known) return known;
  return "other";
}

std::string_view grpcCodeName(int code) {
  static constexpr std::string_view kCodes[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kCodes[code] : "UNKNOWN";
}

void CallMetrics::record(const char* call, std::string_view client, bool decides, int code,
                         std::chrono::nanoseconds took) {
  const std::string_view program = clientProgram(client);
  const std::string_view outcome = grpcCodeName(code);
  MutexLock lock(mutex_);
  ++counts_.calls[{call, std::string(program), std::string(outcome)}];
  counts_.callLatency[{std::string(program), call}].add(took);
  if (!decides) return;
  counts_.decisionLatency[call].add(took);
  if (code != 0) ++counts_.refusals[{call, std::string(outcome)}];
}

CallMetrics::Snapshot CallMetrics::snapshot() const {
  MutexLock lock(mutex_);
  return counts_;
}

}  // namespace vri
