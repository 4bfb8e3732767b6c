#include "tests/soak/soak_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/loopback_http.h"
#include "tests/vri/vrid_process.h"
#include "vri/call_metrics.h"

namespace vri::soak {
namespace {

constexpr auto kSampleEvery = std::chrono::seconds(2);
constexpr char kBucketPrefix[] = "vri_decision_duration_seconds_bucket{";

std::vector<double> latencyBounds() {
  std::vector<double> bounds(kLatencyBuckets.begin(), kLatencyBuckets.end());
  bounds.push_back(INFINITY);
  return bounds;
}

long statusKb(const std::string& status, const std::string& field) {
  const size_t at = status.find(field + ":");
  return at == std::string::npos ? 0 : std::atol(status.c_str() + at + field.size() + 1);
}

int entries(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++n;
  return n;
}

// The decision histogram's cumulative buckets, every call summed; empty when the scrape failed.
std::vector<double> decisionBuckets(const std::string& metrics) {
  const std::vector<double> bounds = latencyBounds();
  std::vector<double> sums(bounds.size(), 0);
  bool found = false;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(kBucketPrefix)) continue;
    const size_t le = line.find("le=\"");
    const size_t close = line.find("\"}", le);
    if (le == std::string::npos || close == std::string::npos) continue;
    const std::string bound = line.substr(le + 4, close - le - 4);
    const double value = std::atof(line.c_str() + close + 2);
    const double upper = bound == "+Inf" ? INFINITY : std::atof(bound.c_str());
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (std::fabs(bounds[i] - upper) < 1e-9 || (std::isinf(bounds[i]) && std::isinf(upper))) {
        sums[i] += value;
        found = true;
      }
    }
  }
  return found || metrics.starts_with("HTTP/1.0 200") || metrics.starts_with("HTTP/1.1 200") ? sums
                                                                                             : std::vector<double>{};
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace

double histogramQuantile(double q, const std::vector<double>& bounds, const std::vector<double>& buckets) {
  if (buckets.empty() || buckets.back() <= 0) return NAN;
  const double rank = q * buckets.back();
  for (size_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i] < rank) continue;
    if (std::isinf(bounds[i])) return bounds[i - 1];  // above the highest bound: that bound, as Prometheus says
    const double lower = i == 0 ? 0 : bounds[i - 1];
    const double below = i == 0 ? 0 : buckets[i - 1];
    const double inBucket = buckets[i] - below;
    return inBucket <= 0 ? bounds[i] : lower + (bounds[i] - lower) * (rank - below) / inBucket;
  }
  return NAN;
}

SoakRecord::SoakRecord(std::string outDir, int metricsPort, SoakSettings settings)
    : outDir_(std::move(outDir)),
      metricsPort_(metricsPort),
      settings_(settings),
      start_(std::chrono::steady_clock::now()) {
  std::filesystem::create_directories(outDir_);
  calls_ = std::fopen((outDir_ + "/calls.csv").c_str(), "w");
  faultsFile_ = std::fopen((outDir_ + "/faults.csv").c_str(), "w");
  std::fprintf(calls_, "seconds,call,accepted,client_ms,refusal\n");
  std::fprintf(faultsFile_, "seconds,fault,violations,detail\n");
  sampler_ = std::thread([this] { sampleLoop(); });
}

SoakRecord::~SoakRecord() {
  stop_ = true;
  if (sampler_.joinable()) sampler_.join();
  if (calls_) std::fclose(calls_);
  if (faultsFile_) std::fclose(faultsFile_);
}

double SoakRecord::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void SoakRecord::call(const std::string& kind, const Outcome& outcome) {
  std::string refusal = outcome.ok ? "" : outcome.detail;
  // libvirt quotes the hook's whole environment before what it printed.
  if (const size_t hookSaid = refusal.find("status 1: "); hookSaid != std::string::npos)
    refusal.erase(0, hookSaid + 10);
  std::replace(refusal.begin(), refusal.end(), ',', ';');
  std::replace(refusal.begin(), refusal.end(), '\n', ' ');
  std::fprintf(calls_, "%.3f,%s,%d,%.1f,%s\n", now(), kind.c_str(), outcome.ok ? 1 : 0, outcome.took.count() * 1000,
               refusal.c_str());
  std::fflush(calls_);
  callTimes_.push_back(now());
  auto& [accepted, refused] = callCounts_[kind];
  ++(outcome.ok ? accepted : refused);
}

void SoakRecord::fault(const std::string& kind, const std::string& detail, const std::vector<Violation>& violations) {
  std::string oneLine = detail;
  std::replace(oneLine.begin(), oneLine.end(), ',', ';');
  std::replace(oneLine.begin(), oneLine.end(), '\n', ' ');
  std::fprintf(faultsFile_, "%.3f,%s,%zu,%s\n", now(), kind.c_str(), violations.size(), oneLine.c_str());
  std::fflush(faultsFile_);
  ++faultCounts_[kind];
  faultTimes_.push_back(now());
  check("after " + kind, violations);
}

void SoakRecord::check(const std::string& when, const std::vector<Violation>& violations) {
  for (const Violation& v : violations) {
    std::fprintf(stderr, "soak: %.0f s, %s: %s: %s\n", now(), when.c_str(), std::string(kindName(v.kind)).c_str(),
                 v.what.c_str());
    violations_.emplace_back(when, v);
  }
}

int SoakRecord::faults(const std::string& kind) const {
  const auto it = faultCounts_.find(kind);
  return it == faultCounts_.end() ? 0 : it->second;
}

ProcessSample SoakRecord::sample(pid_t pid) const {
  ProcessSample s;
  s.at = now();
  s.pid = pid;
  if (pid <= 0) return s;
  const std::string proc = "/proc/" + std::to_string(pid);
  s.rssKb = statusKb(testing::readFile(proc + "/status"), "VmRSS");
  s.fds = entries(proc + "/fd");
  s.threads = entries(proc + "/task");
  s.buckets = decisionBuckets(testing::loopbackHttp(metricsPort_, "GET", "/metrics"));
  s.scraped = !s.buckets.empty();
  return s;
}

void SoakRecord::sampleLoop() {
  while (!stop_) {
    samples_.push_back(sample(vridPid_.load()));
    for (auto until = std::chrono::steady_clock::now() + kSampleEvery;
         !stop_ && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void SoakRecord::finish(const std::vector<Violation>& finalCheck, const std::vector<std::string>& leftBehind) {
  stop_ = true;
  if (sampler_.joinable()) sampler_.join();
  check("final check", finalCheck);
  for (const std::string& leak : leftBehind) check("after every tenant was removed", {{Violation::Kind::kLeak, leak}});

  const std::vector<double> bounds = latencyBounds();
  std::ofstream process(outDir_ + "/process.csv");
  process << "seconds,pid,rss_mib,fds,threads\n";
  for (const ProcessSample& s : samples_)
    if (s.pid > 0 && s.rssKb > 0)
      process << fmt::format("{:.1f},{},{:.2f},{},{}\n", s.at, s.pid, s.rssKb / 1024.0, s.fds, s.threads);

  // Each minute's bucket increase; a new vrid counts from zero.
  std::map<int, std::vector<double>> perMinute;
  const ProcessSample* previous = nullptr;
  for (const ProcessSample& s : samples_) {
    if (!s.scraped) continue;
    std::vector<double>& minute = perMinute[static_cast<int>(s.at / 60)];
    minute.resize(bounds.size(), 0);
    const bool sameVrid = previous != nullptr && previous->pid == s.pid;
    for (size_t i = 0; i < bounds.size(); ++i)
      minute[i] += std::max(0.0, s.buckets[i] - (sameVrid ? previous->buckets[i] : 0));
    previous = &s;
  }
  std::map<int, int> faultsPerMinute, callsPerMinute;
  for (double at : faultTimes_) ++faultsPerMinute[static_cast<int>(at / 60)];
  for (double at : callTimes_) ++callsPerMinute[static_cast<int>(at / 60)];
  std::ofstream minutes(outDir_ + "/minutes.csv");
  minutes << "minute,decisions,p50_ms,p99_ms,client_calls,faults\n";
  double decisions = 0;
  for (const auto& [minute, buckets] : perMinute) {
    decisions += buckets.back();
    minutes << fmt::format(
        "{},{:.0f},{:.2f},{:.2f},{},{}\n", minute + 1, buckets.back(), histogramQuantile(0.5, bounds, buckets) * 1000,
        histogramQuantile(0.99, bounds, buckets) * 1000, callsPerMinute[minute], faultsPerMinute[minute]);
  }

  // Growth of the last vrid over the window nobody killed it in (its first half minute is start-up).
  const double window = std::min(20.0, settings_.killFreeMinutes) * 60;
  const ProcessSample* first = nullptr;
  const ProcessSample* last = nullptr;
  for (const ProcessSample& s : samples_) {
    if (s.pid <= 0 || s.rssKb <= 0) continue;
    if (last == nullptr || s.pid != last->pid) first = nullptr;
    if (first == nullptr && s.at >= now() - window) first = &s;
    last = &s;
  }
  const bool measured = first != nullptr && last != nullptr && first != last && last->at - first->at >= 30;
  const double rssGrowth = measured ? 100.0 * (last->rssKb - first->rssKb) / first->rssKb : NAN;
  const int fdGrowth = measured ? last->fds - first->fds : 0;
  const int threadGrowth = measured ? last->threads - first->threads : 0;

  std::map<Violation::Kind, int> byKind;
  for (const auto& [when, v] : violations_) ++byKind[v.kind];
  const auto count = [&](Violation::Kind k) { return byKind.contains(k) ? byKind.at(k) : 0; };
  int finalDisagreements = 0;
  for (const Violation& v : finalCheck) finalDisagreements += v.kind == Violation::Kind::kDisagreement;

  std::ofstream json(outDir_ + "/summary.json");
  json << "{\"minutes\": " << settings_.minutes << ", \"seed\": " << settings_.seed
       << ", \"decisions\": " << fmt::format("{:.0f}", decisions) << ", \"faults\": {";
  bool firstEntry = true;
  for (const auto& [kind, n] : faultCounts_)
    json << (std::exchange(firstEntry, false) ? "" : ", ") << jsonString(kind) << ": " << n;
  json << "}, \"client_calls\": {";
  firstEntry = true;
  for (const auto& [kind, n] : callCounts_)
    json << (std::exchange(firstEntry, false) ? "" : ", ") << jsonString(kind) << ": {\"accepted\": " << n.first
         << ", \"refused\": " << n.second << "}";
  json << "}, \"double_assigned_cpus\": " << count(Violation::Kind::kCpuTwice)
       << ", \"acknowledged_lost\": " << count(Violation::Kind::kLost)
       << ", \"leaks\": " << count(Violation::Kind::kLeak)
       << ", \"disagreements\": " << count(Violation::Kind::kDisagreement)
       << ", \"disagreements_after_final_reconcile\": " << finalDisagreements
       << ", \"rss_window_minutes\": " << fmt::format("{:.1f}", measured ? (last->at - first->at) / 60 : 0.0)
       << ", \"rss_growth_percent\": " << (measured ? fmt::format("{:.2f}", rssGrowth) : "null")
       << ", \"fd_growth\": " << fdGrowth << ", \"thread_growth\": " << threadGrowth << "}\n";

  std::ofstream report(outDir_ + "/report.md");
  report << "# VRI soak: " << settings_.minutes << " minutes, seed " << settings_.seed << "\n\n"
         << "Made by `scripts/soak.sh --minutes " << settings_.minutes << " --seed " << settings_.seed
         << "` on one node: vrid on the host's cgroup v1 hierarchies, libvirtd with QEMU guests through vri-hook, "
            "containerd 1.6 through vri-cri-shim. The same seed makes the same choices; the daemons' timing does not "
            "repeat.\n\n"
         << "| | |\n|---|---|\n"
         << "| decisions vrid made (from its decision-latency histogram) | " << fmt::format("{:.0f}", decisions)
         << " |\n";
  for (const auto& [kind, n] : callCounts_)
    report << "| client calls `" << kind << "`: accepted, refused | " << n.first << ", " << n.second << " |\n";
  for (const auto& [kind, n] : faultCounts_) report << "| fault `" << kind << "` | " << n << " |\n";
  report
      << "| double-assigned CPUs | " << count(Violation::Kind::kCpuTwice) << " |\n"
      << "| acknowledged tenants lost | " << count(Violation::Kind::kLost) << " |\n"
      << "| leaks (processes, cgroups, ledger rows, QEMUs) | " << count(Violation::Kind::kLeak) << " |\n"
      << "| disagreements after the final reconcile | " << finalDisagreements << " |\n"
      << "| disagreements after a fault, all checks | " << count(Violation::Kind::kDisagreement) << " |\n"
      << "| vrid's RSS growth over its last " << fmt::format("{:.1f}", measured ? (last->at - first->at) / 60 : 0.0)
      << " minutes, unkilled | " << (measured ? fmt::format("{:.2f} %", rssGrowth) : "not measured (too short)")
      << " |\n"
      << "| vrid's file descriptors, threads: growth over the same window | " << fdGrowth << ", " << threadGrowth
      << " |\n\n"
      << "![decision latency per minute](latency.png)\n\n![vrid's RSS, file descriptors and threads](process.png)\n\n"
      << "![decisions and faults per minute](decisions.png)\n\n"
      << "Grey lines mark faults. The data: calls.csv, faults.csv, process.csv, minutes.csv, summary.json.\n";
  if (!violations_.empty()) {
    report << "\n## Violations\n\n";
    for (size_t i = 0; i < violations_.size() && i < 100; ++i)
      report << "- " << violations_[i].first << ": " << kindName(violations_[i].second.kind) << ": "
             << violations_[i].second.what << "\n";
  }
}

}  // namespace vri::soak
