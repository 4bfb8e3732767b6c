// What watching usage costs with 1,000 tenants that have real cgroups (root, cgroup v1: a private
// subtree of the cpuset, cpu and cpuacct hierarchies, removed after):
//   - the sampler thread's CPU time over --seconds at --interval-ms (its own CLOCK_THREAD_CPUTIME_ID,
//     waits included), as a share of one CPU; and a round's time beside the floor: the same files
//     read by one pread each in a loop, which is what the kernel alone costs;
//   - a scrape of the metrics endpoint over HTTP, beside rendering the same text in-process;
//   - a `vrictl top` refresh: GetUsage and GetNode over the unix socket and the table formatted.
//
//   usage_scale [--tenants 0,1000] [--seconds 60] [--interval-ms 1000]
//
// vrid runs in-process (Daemon::start) on the kernel's cgroupfs; each tenant is a BestEffort pod
// with one container (its pod and container cgroups in each hierarchy). The sampler keeps two files
// per pod open (cpu.stat, cpuacct.usage; memory is not among this host's controllers). The last lines
// are one JSON object per configuration.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/decision_measure.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "proto/vri.grpc.pb.h"
#include "tests/support/loopback_http.h"
#include "vri/daemon.h"
#include "vri/metrics_text.h"
#include "vrictl/top_view.h"

namespace {

using vri::CgroupDir;
using vri::CgroupPath;
using Clock = std::chrono::steady_clock;

int fail(const std::string& message) {
  std::fprintf(stderr, "usage_scale: %s\n", message.c_str());
  return 1;
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void removeTree(vri::CgroupFs& fs, const CgroupDir& dir) {
  auto names = fs.children(dir);
  if (names.ok()) {
    for (const std::string& name : *names) removeTree(fs, {dir.hierarchy, *dir.path.child(name)});
  }
  (void)fs.rmdir(dir);
}

// GET /metrics; the answer's size.
size_t scrape(int port) { return vri::testing::loopbackHttp(port, "GET", "/metrics").size(); }

struct Row {
  int tenants = 0;
  int seconds = 0;
  int intervalMs = 0;
  double samplerCpuPercent = 0;
  double roundMs = 0;       // the sampler's last round
  double floorRoundMs = 0;  // the same files, one pread each
  size_t filesOpen = 0;
  double scrapeMs = 0, renderMs = 0;
  size_t scrapeBytes = 0;
  double topMs = 0;
};

vri::Result<Row> run(vri::KernelCgroupFs& fs, const std::vector<std::string>& hierarchies, int tenants, int seconds,
                     int intervalMs, const std::string& stateDir) {
  std::fprintf(stderr, "usage_scale: %d tenants, %d s at %d ms\n", tenants, seconds, intervalMs);
  const CgroupPath top = *CgroupPath::parse("vri-usage-bench-" + std::to_string(::getpid()));
  const std::string cpus = vri::CpuSet::parse("0-" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN) - 1))->format();
  for (const std::string& h : hierarchies) {
    for (const CgroupPath& path : {top, *top.child("machine")}) {
      VRI_TRY(fs.mkdir({h, path}));
      if (h == "cpuset") {
        VRI_TRY(fs.write({h, path}, "cpuset.mems", "0"));
        VRI_TRY(fs.write({h, path}, "cpuset.cpus", cpus));
      }
    }
  }
  vri::DaemonConfig config = vri::defaultConfig();
  config.cgroupRoot = "/sys/fs/cgroup";
  config.topology = "live";
  config.reservedCpus.count = 0;
  config.stateDir = stateDir;
  config.socket = stateDir + "/ro.sock";
  config.adminSocket = stateDir + "/admin.sock";
  config.libvirtUri = "";
  config.reconcileIntervalSeconds = 0;
  config.logLevel = vri::LogLevel::kError;
  config.v1Controllers = {"cpuset", "cpu", "cpuacct"};
  config.layout.kubeletParent = top;
  config.layout.machinePartition = *top.child("machine");
  config.layout.libvirt = vri::LibvirtLayout::kNoSystemd;
  config.layout.ownership = vri::Ownership::kEverything;
  config.usageIntervalMs = intervalMs;
  config.metricsPort = vri::testing::freeLoopbackPort();
  // Beside the state directory, not in it: vrid takes a directory with files of others for not its own.
  config.metricsTokenFile = vri::testing::writeMetricsToken(stateDir + ".metrics.token");
  vri::Logger log(vri::LogLevel::kError);
  Row row;
  row.tenants = tenants;
  row.seconds = seconds;
  row.intervalMs = intervalMs;
  {
    VRI_ASSIGN_OR_RETURN(auto daemon, vri::Daemon::start(config, fs, log));
    for (int n = 0; n < tenants; ++n) {
      const vri::PodSpec pod{vri::bench::uid(n), "bench/" + vri::bench::uid(n), vri::QosClass::kBestEffort, 0, 0};
      VRI_TRY(daemon->node().admitContainer(pod,
                                            {"app", "c" + std::to_string(n), false, 0, 0, std::nullopt, std::nullopt}));
    }
    const vri::UsageSampler& sampler = *daemon->usage();
    // Two rounds so that every tenant's files are open, then the window.
    const uint64_t first = sampler.stats().rounds;
    while (sampler.stats().rounds < first + 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const vri::SamplerStats before = sampler.stats();
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    const vri::SamplerStats after = sampler.stats();
    const double wall = std::chrono::duration<double>(Clock::now() - start).count();
    row.samplerCpuPercent = 100.0 * std::chrono::duration<double>(after.threadCpu - before.threadCpu).count() / wall;
    row.roundMs = static_cast<double>(after.lastRound.count()) / 1000;
    row.filesOpen = after.filesOpen;

    // The floor: the same files the sampler keeps open, each read once per round.
    std::vector<int> fds;
    for (int n = 0; n < tenants; ++n) {
      for (const char* file : {"cpu/cpu.stat", "cpuacct/cpuacct.usage"}) {
        const std::string hierarchy = std::string(file).substr(0, std::string(file).find('/'));
        const std::string path = "/sys/fs/cgroup/" + hierarchy + "/" + top.str() + "/kubepods/besteffort/pod" +
                                 vri::bench::uid(n) + "/" + std::string(file).substr(hierarchy.size() + 1);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) fds.push_back(fd);
      }
    }
    std::vector<double> floor;
    char buffer[512];
    for (int round = 0; round < 20; ++round) {
      const auto t0 = Clock::now();
      for (int fd : fds) (void)!::pread(fd, buffer, sizeof buffer, 0);
      floor.push_back(ms(Clock::now() - t0));
    }
    for (int fd : fds) ::close(fd);
    row.floorRoundMs = median(floor);

    // A scrape over HTTP, and the same text rendered in-process.
    std::vector<double> scrapes, renders;
    for (int i = 0; i < 20; ++i) {
      auto t0 = Clock::now();
      row.scrapeBytes = scrape(daemon->metricsPort());
      scrapes.push_back(ms(Clock::now() - t0));
      t0 = Clock::now();
      const std::string text = vri::renderMetrics(daemon->node(), daemon->usage(), daemon->callMetrics());
      renders.push_back(ms(Clock::now() - t0));
    }
    row.scrapeMs = median(scrapes);
    row.renderMs = median(renders);

    // vrictl top's refresh: its two calls over the socket and the whole table.
    auto stub = vri::v1::Vri::NewStub(grpc::CreateChannel("unix:" + config.socket, grpc::InsecureChannelCredentials()));
    std::vector<double> tops;
    for (int i = 0; i < 20; ++i) {
      const auto t0 = Clock::now();
      grpc::ClientContext c1, c2;
      vri::v1::UsageReport report;
      vri::v1::Node node;
      if (!stub->GetUsage(&c1, {}, &report).ok() || !stub->GetNode(&c2, {}, &node).ok())
        return vri::Error::failedPrecondition("GetUsage or GetNode failed");
      const std::string table = vri::ctl::formatTop(report, node, {}, {});
      tops.push_back(ms(Clock::now() - t0));
      if (table.empty()) return vri::Error::failedPrecondition("empty table");
    }
    row.topMs = median(tops);
    stub.reset();
    daemon->shutdown(std::chrono::seconds(1));
  }
  for (const std::string& h : hierarchies) removeTree(fs, {h, top});
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts = {0, 1000};
  int seconds = 60, interval_ms = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tenants") {
      counts.clear();
      std::stringstream in(value);
      for (std::string n; std::getline(in, n, ',');) counts.push_back(std::stoi(n));
    } else if (flag == "--seconds") {
      seconds = std::stoi(value);
    } else if (flag == "--interval-ms") {
      interval_ms = std::stoi(value);
    } else {
      return fail("unknown flag: " + flag);
    }
  }
  if (::geteuid() != 0) return fail("needs root (it makes real cgroups)");
  auto fs = vri::KernelCgroupFs::create("/sys/fs/cgroup");
  if (!fs.ok()) return fail(fs.error().message());
  auto mounts = vri::readCgroupMounts(*fs);
  if (!mounts.ok()) return fail(mounts.error().message());
  std::vector<std::string> hierarchies;
  for (const char* controller : {"cpuset", "cpu", "cpuacct"}) {
    auto h = vri::v1Hierarchy(*mounts, controller, "/sys/fs/cgroup");
    if (!h.ok()) return fail(std::string("needs the cgroup v1 ") + controller + " hierarchy: " + h.error().message());
    if (std::find(hierarchies.begin(), hierarchies.end(), *h) == hierarchies.end()) hierarchies.push_back(*h);
  }
  // The sampler keeps two files per tenant open: the open-file limit as vrid raises it.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  char pattern[] = "/var/tmp/usage-scale-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return fail("mkdtemp failed");
  std::vector<Row> rows;
  for (int tenants : counts) {
    auto row =
        run(*fs, hierarchies, tenants, seconds, interval_ms, std::string(pattern) + "/s" + std::to_string(tenants));
    if (!row.ok()) return fail(std::to_string(tenants) + " tenants: " + row.error().message());
    rows.push_back(*row);
  }
  std::filesystem::remove_all(pattern);  // the runs' state and tokens: nothing of them is read afterwards
  std::printf("\n%-8s %10s %9s %11s %6s %10s %10s %8s\n", "tenants", "sampler %", "round ms", "floor ms", "files",
              "scrape ms", "render ms", "top ms");
  for (const Row& r : rows)
    std::printf("%-8d %10.3f %9.2f %11.2f %6zu %10.2f %10.2f %8.2f\n", r.tenants, r.samplerCpuPercent, r.roundMs,
                r.floorRoundMs, r.filesOpen, r.scrapeMs, r.renderMs, r.topMs);
  for (const Row& r : rows) {
    std::printf(
        "{\"tenants\": %d, \"seconds\": %d, \"interval_ms\": %d, \"sampler_cpu_percent\": %.3f, \"round_ms\": %.3f, "
        "\"floor_round_ms\": %.3f, \"files_open\": %zu, \"scrape_ms_p50\": %.2f, \"render_ms_p50\": %.2f, "
        "\"scrape_bytes\": %zu, \"top_refresh_ms_p50\": %.2f}\n",
        r.tenants, r.seconds, r.intervalMs, r.samplerCpuPercent, r.roundMs, r.floorRoundMs, r.filesOpen, r.scrapeMs,
        r.renderMs, r.scrapeBytes, r.topMs);
  }
  return 0;
}
