// Ledger decisions per second on a real sqlite file, beside the rate of empty
// sqlite commits with the same settings on the same disk, and the ledger's
// memory with 1,000 tenants.
//
//   ledger_bench [--dir DIR] [--decisions 4000] [--durability normal|full]
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "accounting/hwloc_topology.h"
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

long residentKiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::unique_ptr<vri::Ledger> open(const std::string& file, vri::Durability durability,
                                  std::shared_ptr<const vri::Topology> topo) {
  std::filesystem::remove(file);
  std::filesystem::remove(file + "-wal");
  std::filesystem::remove(file + "-shm");
  vri::LedgerConfig config;
  config.pool.reserved.count = 2;
  auto store = vri::SqliteLedgerStore::open(file, durability);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.error().message().c_str());
    std::exit(1);
  }
  auto ledger = vri::Ledger::open(topo, config, std::move(store).value());
  if (!ledger.ok()) {
    std::fprintf(stderr, "%s\n", ledger.error().message().c_str());
    std::exit(1);
  }
  return std::move(ledger).value();
}

// admit + release pairs of one kind; returns decisions per second.
double run(vri::Ledger& ledger, int threads, int decisions, bool exclusive) {
  std::atomic<int> failures{0};
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < decisions / threads / 2; ++i) {
        const std::string uid = "t" + std::to_string(t) + "-" + std::to_string(i);
        vri::PodSpec pod{uid, "bench/" + uid, exclusive ? vri::QosClass::kGuaranteed : vri::QosClass::kBurstable, 0, 0};
        // Runtime ids are unique on a node: each pod's container its own.
        vri::ContainerSpec c{"c",          "c-" + uid,  false, exclusive ? 2000 : 100, exclusive ? 2000 : 0,
                             std::nullopt, std::nullopt};
        if (!ledger.apply(&vri::Ledger::decideAdmitContainer, pod, c, vri::kNoneFinished).ok()) ++failures;
        if (!ledger.apply(&vri::Ledger::decideReleasePod, uid, vri::ReleaseGuard{}).ok()) ++failures;
      }
    });
  }
  for (auto& w : workers) w.join();
  const double elapsed = seconds(start);
  if (failures > 0) std::fprintf(stderr, "ledger_bench: %d failed decisions\n", failures.load());
  return (decisions / threads / 2 * 2 * threads) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/var/tmp";
  int decisions = 4000;
  vri::Durability durability = vri::Durability::kNormal;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir")
      dir = argv[i + 1];
    else if (flag == "--decisions")
      decisions = std::max(16, std::atoi(argv[i + 1]));
    else if (flag == "--durability")
      durability = *vri::parseDurability(argv[i + 1]);
  }
  const std::string file = dir + "/vri-ledger-bench-" + std::to_string(getpid()) + ".db";
  auto topo =
      std::make_shared<const vri::Topology>(std::move(vri::loadSyntheticTopology("pack:2 numa:2 core:8 pu:2")).value());

  // The disk: empty commits with the same settings.
  double raw = 0;
  {
    std::filesystem::remove(file);
    auto store = vri::SqliteLedgerStore::open(file, durability);
    const auto start = Clock::now();
    for (int i = 0; i < decisions; ++i) (void)(*store)->emptyCommit();
    raw = decisions / seconds(start);
  }
  const char* mode = durability == vri::Durability::kFull ? "full" : "normal";
  for (bool exclusive : {false, true}) {
    for (int threads : {1, 8}) {
      auto ledger = open(file, durability, topo);
      const double rate = run(*ledger, threads, decisions, exclusive);
      std::printf(
          "{\"durability\":\"%s\",\"tenant\":\"%s\",\"threads\":%d,\"decisions_per_s\":%.0f,\"empty_commits_per_s\":%."
          "0f,"
          "\"ratio\":%.2f}\n",
          mode, exclusive ? "exclusive" : "shared", threads, rate, raw, rate / raw);
    }
  }
  // Memory of 1,000 tenants (pods with one container; a tenth exclusive).
  {
    auto ledger = open(file, durability, topo);
    const long before = residentKiB();
    for (int i = 0; i < 1000; ++i) {
      const bool exclusive = i % 10 == 0 && i < 300;
      const std::string uid = "m" + std::to_string(i);
      vri::PodSpec pod{uid, "bench/" + uid, exclusive ? vri::QosClass::kGuaranteed : vri::QosClass::kBurstable, 0, 0};
      vri::ContainerSpec c{"c",          "c-" + uid,  false, exclusive ? 1000 : 10, exclusive ? 1000 : 0,
                           std::nullopt, std::nullopt};
      (void)ledger->apply(&vri::Ledger::decideAdmitContainer, pod, c, vri::kNoneFinished);
    }
    const vri::StatePtr now = ledger->state();
    std::printf("{\"tenants\":%zu,\"ledger_rss_kib\":%ld}\n", now->pods.size(), residentKiB() - before);
  }
  std::filesystem::remove(file);
  std::filesystem::remove(file + "-wal");
  std::filesystem::remove(file + "-shm");
  return 0;
}
