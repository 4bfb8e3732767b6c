// How many calls vrid answered and how long they took, by call, by the VRI program that made them
// and by outcome: the metrics endpoint's counters and histograms. Recorded where each call is
// answered (VriService), so the hook's calls (one process per libvirt event, which cannot be
// scraped) and the shim's and NRI plugin's are counted where they meet vrid.
//
// Bounded: calls are the service's methods (string literals), programs VRI's own (anything else
// counts as "other"), outcomes gRPC's 17 codes.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "base/thread_annotations.h"

namespace vri {

// Upper bounds (seconds) of the latency buckets: 0.5 ms to 10 s.
inline constexpr std::array<double, 14> kLatencyBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                           0.1,    0.25,  0.5,    1,     2.5,  5,     10};

struct LatencyHistogram {
  std::array<uint64_t, kLatencyBuckets.size()> buckets{};  // not cumulative: each bucket its own calls
  uint64_t count = 0;
  double sumSeconds = 0;
  void add(std::chrono::nanoseconds took);
};

// The program a user agent names ("vri-hook/0.1.0 grpc-c++/…"), among VRI's clients; "other" else.
std::string_view clientProgram(std::string_view userAgent);
// "OK", "RESOURCE_EXHAUSTED", …
std::string_view grpcCodeName(int code);

class CallMetrics {
 public:
  // `decides`: the call is a decision (admit, release, resize, start, move).
  void record(const char* call, std::string_view client, bool decides, int code, std::chrono::nanoseconds took);

  struct Snapshot {
    // (call, client, code) -> calls
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t> calls;
    // (client, call) -> latency of every call
    std::map<std::pair<std::string, std::string>, LatencyHistogram> callLatency;
    // decisions: call -> latency, and (call, reason) -> refusals
    std::map<std::string, LatencyHistogram> decisionLatency;
    std::map<std::pair<std::string, std::string>, uint64_t> refusals;
  };
  Snapshot snapshot() const;

 private:
  mutable Mutex mutex_;
  Snapshot counts_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
