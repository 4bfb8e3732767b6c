// Load on a running vrid: N concurrent clients doing admit/release pairs of
// shared containers for a fixed time, then the same with exclusive ones,
// beside a baseline measured in the same run — per pair, two empty RPCs
// (health checks) and two empty sqlite commits of the same durability —,
// and vrid's resident memory with 1,000 live tenants.
//
//   vrid_load [--vrid PATH] [--clients 16] [--seconds 5] [--rounds 3] [--durability normal|full] [--tenants 1000]
//             [--flood-streams 3000] [--flood-scanners 2]
//
// With a flood, one more phase: the shared pairs on the admin socket while the read-only socket
// holds --flood-streams Watch streams open and --flood-scanners clients ask for dry-run reconciles
// back to back (what anyone in socket_group can do), so that the decisions' latency under the flood
// stands beside the idle one.
//
// The three phases alternate for --rounds rounds and each figure is the median
// over the rounds; a ratio is taken within its round, so a noisy neighbour moves
// both sides of it alike. Beside the rates, the CPU time per pair of vrid and of
// the clients: steady where the rates are not, and where a pair's cost lies.
// The last lines are one JSON object per phase.
//
// vrid runs as its own process on a synthetic 64-CPU machine, pointed at
// cgroups that do not exist, so the figures are the decision path: RPC,
// ledger, sqlite commit, and the cgroup plan.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "accounting/sqlite_ledger_store.h"
#include "proto/grpc_health_v1.grpc.pb.h"
#include "proto/vri.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string vrid;
  int clients = 16;
  int seconds = 5;
  std::string durability = "normal";
  int tenants = 1000;
  int rounds = 3;
  int floodStreams = 0;
  int floodScanners = 0;
};

struct Result {
  double pairsPerSecond = 0;
  double p50Ms = 0, p99Ms = 0;  // per call
  int failures = 0;
  // CPU time per pair, vrid's and this process's (the clients, and the baseline's commits): steadier than the
  // rate on a shared machine, and what says where a pair's cost lies.
  double vridCpuUs = 0, clientCpuUs = 0;
  double ratio = 1;  // pairs/s over the baseline's of the same round
};

// CPU time (user + system) in microseconds: a process's from /proc, or this one's.
double cpuMicros(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t end = text.rfind(')');  // the command may hold spaces
  if (end == std::string::npos) return 0;
  std::istringstream fields(text.substr(end + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);  // utime, stime
  }
  return ticks * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}
double selfCpuMicros() {
  rusage self{};
  ::getrusage(RUSAGE_SELF, &self);
  const auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
  return us(self.ru_utime) + us(self.ru_stime);
}

std::string podUid(int client, int n) {
  char uid[40];
  std::snprintf(uid, sizeof uid, "1a%06d-0000-4000-8000-%012d", client, n);
  return uid;
}

// Runs `pair(client, n)` from every client until the time is up.
template <typename Pair>
Result drive(pid_t server, int clients, int seconds, Pair pair) {
  const double server_cpu = cpuMicros(server), client_cpu = selfCpuMicros();
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<long> pairs{0};
  std::atomic<int> failures{0};
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int n = 0; Clock::now() < end; ++n) {
        if (!pair(c, n, latencies[c])) ++failures;
        ++pairs;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  Result r;
  r.pairsPerSecond = static_cast<double>(pairs.load()) / elapsed;
  if (!all.empty()) {
    r.p50Ms = all[all.size() / 2];
    r.p99Ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  r.failures = failures.load();
  if (pairs.load() > 0) {
    r.vridCpuUs = (cpuMicros(server) - server_cpu) / static_cast<double>(pairs.load());
    r.clientCpuUs = (selfCpuMicros() - client_cpu) / static_cast<double>(pairs.load());
  }
  return r;
}

template <typename Call>
bool timed(std::vector<double>& latencies, Call call) {
  const auto start = Clock::now();
  const bool ok = call();
  latencies.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  return ok;
}

long rssKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  }
  return -1;
}

long threadCount(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("Threads:")) return std::stol(line.substr(8));
  }
  return -1;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "vrid_load: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.vrid = (std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "vri/vrid").string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--vrid")
      o.vrid = value;
    else if (flag == "--clients")
      o.clients = std::stoi(value);
    else if (flag == "--seconds")
      o.seconds = std::stoi(value);
    else if (flag == "--durability")
      o.durability = value;
    else if (flag == "--tenants")
      o.tenants = std::stoi(value);
    else if (flag == "--rounds")
      o.rounds = std::max(1, std::stoi(value));
    else if (flag == "--flood-streams")
      o.floodStreams = std::max(0, std::stoi(value));
    else if (flag == "--flood-scanners")
      o.floodScanners = std::max(0, std::stoi(value));
    else
      return fail("unknown flag " + flag);
  }
  char pattern[] = "/var/tmp/vrid-load-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return fail("mkdtemp failed");
  const std::string dir = pattern;
  const std::string socket = dir + "/admin.sock";
  // An empty configuration of vrid's own (vrid reads only a regular file only root may change).
  const std::string config = dir + "/vrid.conf";
  std::ofstream(config).close();
  const pid_t vrid = ::fork();
  if (vrid == 0) {
    const std::vector<std::string> args = {o.vrid,
                                           "--config=" + config,
                                           "--topology=synthetic:pack:2 numa:2 core:8 pu:2",
                                           "--state-dir=" + dir + "/state",
                                           "--socket=" + dir + "/ro.sock",
                                           "--admin-socket=" + socket,
                                           "--kubelet-cgroup-root=/vrid-load-absent",
                                           "--machine-partition=vrid-load-absent/machine",
                                           "--libvirt-layout=no-systemd",
                                           "--libvirt-uri=",
                                           "--durability=" + o.durability,
                                           "--log-level=warning",
                                           "--reconcile-interval=0"};
    std::vector<char*> argv_child;
    for (const auto& a : args) argv_child.push_back(const_cast<char*>(a.c_str()));
    argv_child.push_back(nullptr);
    ::execv(argv_child[0], argv_child.data());
    ::_exit(127);
  }
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    ::kill(vrid, SIGKILL);
    return fail("vrid did not come up at " + socket);
  }
  auto health = grpc::health::v1::Health::NewStub(channel);
  auto api = vri::v1::Vri::NewStub(channel);
  auto durability = vri::parseDurability(o.durability);
  auto store = vri::SqliteLedgerStore::open(dir + "/baseline.sqlite", *durability);
  if (!store.ok()) return fail(store.error().message());
  std::mutex store_mutex;  // one sqlite connection, as vrid has

  const auto emptyRpcAndCommit = [&](std::vector<double>& lat) {
    return timed(lat, [&] {
      grpc::ClientContext context;
      grpc::health::v1::HealthCheckResponse reply;
      if (!health->Check(&context, {}, &reply).ok()) return false;
      std::lock_guard lock(store_mutex);
      return (*store)->emptyCommit().ok();
    });
  };
  const auto baselinePair = [&](int, int, std::vector<double>& lat) {
    return emptyRpcAndCommit(lat) && emptyRpcAndCommit(lat);
  };

  const auto pairOf = [&](bool exclusive) {
    return [&, exclusive](int client, int n, std::vector<double>& lat) {
      vri::v1::AdmitContainerRequest admit;
      admit.set_pod_uid(podUid(client, n));
      admit.set_qos(exclusive ? vri::v1::GUARANTEED : vri::v1::BURSTABLE);
      admit.set_container_name("app");
      admit.set_cpu_request_milli(exclusive ? 1000 : 100);
      admit.set_cpu_limit_milli(exclusive ? 1000 : 0);
      if (exclusive) admit.set_memory_limit_bytes(64 << 20);
      const bool admitted = timed(lat, [&] {
        grpc::ClientContext context;
        vri::v1::ContainerAllocation placed;
        return api->AdmitContainer(&context, admit, &placed).ok();
      });
      const bool released = timed(lat, [&] {
        grpc::ClientContext context;
        vri::v1::ReleasePodRequest release;
        release.set_pod_uid(admit.pod_uid());
        vri::v1::Released done;
        return api->ReleasePod(&context, release, &done).ok();
      });
      return admitted && released;
    };
  };
  // Each round's pod UIDs are new: a client's n restarts at 0 every round.
  std::vector<Result> baselines, shareds, exclusives;
  for (int round = 0; round < o.rounds; ++round) {
    baselines.push_back(drive(vrid, o.clients, o.seconds, baselinePair));
    shareds.push_back(drive(vrid, o.clients, o.seconds, pairOf(false)));
    exclusives.push_back(drive(vrid, o.clients, o.seconds, pairOf(true)));
    shareds.back().ratio = shareds.back().pairsPerSecond / baselines.back().pairsPerSecond;
    exclusives.back().ratio = exclusives.back().pairsPerSecond / baselines.back().pairsPerSecond;
  }
  // Each figure is its own median over the rounds; the ratio is each round's over the baseline of that round, so
  // that a neighbour's load that comes and goes moves both sides of it alike.
  const auto median = [](const std::vector<Result>& rounds) {
    const auto of = [&](double Result::*field) {
      std::vector<double> values;
      for (const Result& r : rounds) values.push_back(r.*field);
      std::sort(values.begin(), values.end());
      return values[values.size() / 2];
    };
    Result r;
    r.pairsPerSecond = of(&Result::pairsPerSecond);
    r.p50Ms = of(&Result::p50Ms);
    r.p99Ms = of(&Result::p99Ms);
    r.vridCpuUs = of(&Result::vridCpuUs);
    r.clientCpuUs = of(&Result::clientCpuUs);
    r.ratio = of(&Result::ratio);
    for (const Result& each : rounds) r.failures += each.failures;
    return r;
  };
  const Result baseline = median(baselines), shared = median(shareds), exclusive = median(exclusives);

  // The flood: streams held open and dry runs back to back on the read-only socket.
  std::optional<Result> flooded;
  long flood_threads = 0;
  int streams_served = 0;
  if (o.floodStreams > 0 || o.floodScanners > 0) {
    auto readOnly =
        vri::v1::Vri::NewStub(grpc::CreateChannel("unix:" + dir + "/ro.sock", grpc::InsecureChannelCredentials()));
    struct Held {
      grpc::ClientContext context;
      std::unique_ptr<grpc::ClientReader<vri::v1::Event>> stream;
    };
    std::vector<std::unique_ptr<Held>> held;
    for (int i = 0; i < o.floodStreams; ++i) {
      auto h = std::make_unique<Held>();
      h->stream = readOnly->Watch(&h->context, vri::v1::WatchRequest());
      held.push_back(std::move(h));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));  // the streams reach vrid
    std::atomic<bool> stop{false};
    std::vector<std::thread> scanners;
    for (int i = 0; i < o.floodScanners; ++i) {
      scanners.emplace_back([&] {
        while (!stop) {
          grpc::ClientContext context;
          vri::v1::ReconcileRequest dry;
          dry.set_dry_run(true);
          vri::v1::ReconcileReply report;
          if (!readOnly->Reconcile(&context, dry, &report).ok())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      });
    }
    flood_threads = threadCount(vrid);
    std::vector<Result> rounds;
    for (int round = 0; round < o.rounds; ++round) rounds.push_back(drive(vrid, o.clients, o.seconds, pairOf(false)));
    flooded = median(rounds);
    flooded->ratio = flooded->pairsPerSecond / baseline.pairsPerSecond;
    stop = true;
    for (auto& t : scanners) t.join();
    for (auto& h : held) {
      h->context.TryCancel();
      if (h->stream->Finish().error_code() == grpc::StatusCode::CANCELLED) ++streams_served;
    }
  }

  const long idle_rss = rssKiB(vrid);
  int live = 0;
  for (int n = 0; n < o.tenants; ++n) {
    grpc::ClientContext context;
    vri::v1::AdmitContainerRequest admit;
    admit.set_pod_uid(podUid(999, n));
    admit.set_qos(vri::v1::BEST_EFFORT);
    admit.set_container_name("app");
    vri::v1::ContainerAllocation placed;
    if (api->AdmitContainer(&context, admit, &placed).ok()) ++live;
  }
  const long loaded_rss = rssKiB(vrid);
  ::kill(vrid, SIGTERM);
  int status = 0;
  ::waitpid(vrid, &status, 0);
  std::filesystem::remove_all(dir);

  std::printf("vrid_load: %d clients, %d s per phase, %d rounds (median shown), durability %s\n", o.clients, o.seconds,
              o.rounds, o.durability.c_str());
  const auto row = [&](const char* name, const Result& r) {
    std::printf(
        "  %-34s %8.0f pairs/s  p50 %6.2f ms  p99 %6.2f ms  failures %d  (%.2fx baseline)  CPU per pair: vrid %.0f us, "
        "clients %.0f us\n",
        name, r.pairsPerSecond, r.p50Ms, r.p99Ms, r.failures, r.ratio, r.vridCpuUs, r.clientCpuUs);
  };
  row("baseline (2x empty RPC + commit)", baseline);
  row("shared admit/release", shared);
  row("exclusive admit/release", exclusive);
  if (flooded) {
    row("shared, read-only socket flooded", *flooded);
    std::printf("  flood: %d streams asked for (%d held until cancelled), %d dry-run scanners; vrid's threads %ld\n",
                o.floodStreams, streams_served, o.floodScanners, flood_threads);
  }
  std::printf("  vrid RSS: %.1f MB idle, %.1f MB with %d live tenants\n", idle_rss / 1024.0, loaded_rss / 1024.0, live);
  std::printf("  exit status after SIGTERM: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  const auto json = [&](const char* phase, const Result& r) {
    std::printf(
        "{\"phase\":\"%s\",\"pairs_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"failures\":%d,"
        "\"ratio\":%.3f,\"vrid_cpu_us_per_pair\":%.1f,\"client_cpu_us_per_pair\":%.1f,\"rss_mb_loaded\":%.1f}\n",
        phase, r.pairsPerSecond, r.p50Ms, r.p99Ms, r.failures, r.ratio, r.vridCpuUs, r.clientCpuUs,
        loaded_rss / 1024.0);
  };
  json("baseline", baseline);
  json("shared", shared);
  json("exclusive", exclusive);
  if (flooded) json("shared_flooded", *flooded);
  return 0;
}
