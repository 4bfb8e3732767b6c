// What a soak writes down as it runs, and the report made of it at the end:
//   calls.csv    every deciding client call (VM start and destroy, pod create and remove): time, kind,
//                accepted or refused, how long the client waited;
//   faults.csv   every fault: time, kind, the violations the check after it found;
//   process.csv  every 2 s: vrid's pid, RSS, open file descriptors, threads, and its decision-latency
//                histogram (vri_decision_duration_seconds, every call summed) from the metrics endpoint;
//   minutes.csv  per minute: decisions vrid made, their p50 and p99 latency (Prometheus'
//                histogram_quantile over the minute's bucket increase), client calls, faults;
//   summary.json the counts an operator reads first; report.md, the page (scripts/soak.sh adds the plots).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/soak/node_checks.h"
#include "tests/soak/tenants.h"

namespace vri::soak {

struct ProcessSample {
  double at = 0;  // seconds since the soak began
  pid_t pid = 0;
  long rssKb = 0;
  int fds = 0;
  int threads = 0;
  bool scraped = false;
  std::vector<double> buckets;  // cumulative, as the endpoint gives them, +Inf last
};

struct SoakSettings {
  double minutes = 5;
  unsigned seed = 61;
  double killFreeMinutes = 1;  // vrid is not killed in the run's last minutes: its growth is measured there
};

class SoakRecord {
 public:
  SoakRecord(std::string outDir, int metricsPort, SoakSettings settings);
  ~SoakRecord();  // stops sampling
  SoakRecord(const SoakRecord&) = delete;
  SoakRecord& operator=(const SoakRecord&) = delete;

  double now() const;
  // The vrid to sample from now on (0: none running).
  void sampleVrid(pid_t pid) { vridPid_.store(pid); }

  void call(const std::string& kind, const Outcome& outcome);
  void fault(const std::string& kind, const std::string& detail, const std::vector<Violation>& violations);
  void check(const std::string& when, const std::vector<Violation>& violations);

  int faults(const std::string& kind) const;
  int totalViolations() const { return static_cast<int>(violations_.size()); }

  // Stops sampling and writes minutes.csv, summary.json and report.md. `finalCheck` is what the
  // last check found once every tenant was gone; `leftBehind` what it found lingering (leaks).
  void finish(const std::vector<Violation>& finalCheck, const std::vector<std::string>& leftBehind);

 private:
  void sampleLoop();
  ProcessSample sample(pid_t pid) const;

  std::string outDir_;
  int metricsPort_;
  SoakSettings settings_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<pid_t> vridPid_{0};
  std::atomic<bool> stop_{false};
  std::vector<ProcessSample> samples_;  // the sampling thread's until it is joined
  std::thread sampler_;
  std::FILE* calls_ = nullptr;
  std::FILE* faultsFile_ = nullptr;
  std::map<std::string, int> faultCounts_;
  std::vector<double> faultTimes_, callTimes_;                 // seconds since the soak began: the per-minute counts
  std::map<std::string, std::pair<int, int>> callCounts_;      // kind -> (accepted, refused)
  std::vector<std::pair<std::string, Violation>> violations_;  // when, what
};

// Prometheus' histogram_quantile: `q` of the calls counted by cumulative `buckets` (upper bounds
// `bounds`, +Inf last), interpolated linearly inside the bucket that holds it; seconds.
double histogramQuantile(double q, const std::vector<double>& bounds, const std::vector<double>& buckets);

}  // namespace vri::soak
