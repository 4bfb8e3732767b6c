// The decision pipeline's test bed: a real ledger (sqlite or a store that
// fails on demand), the cgroupfs fixture (v1 or v2) behind a cgroupfs that
// fails on demand, a node manager on a manual clock, and request builders.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>

#include "accounting/hwloc_topology.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/eventually.h"
#include "tests/support/failing_cgroupfs.h"
#include "tests/support/failing_ledger_store.h"
#include "tests/support/manual_clock.h"
#include "tests/support/pages_on_nodes.h"
#include "tests/support/temp_dir.h"
#include "vri/node_manager.h"

namespace vri::testing {

inline constexpr char kTopology[] = "pack:1 numa:2(memory=8GiB) core:2 pu:2";  // CPUs 0-7

class Pipeline {
 public:
  // `partitions`: v2 only, the fixture emulates cpuset partitions and vrid uses them.
  // `topology`: one of the test's own (CPUs 0-7, nodes 0-1) instead of kTopology.
  explicit Pipeline(Ownership ownership = Ownership::kEverything, CgroupVersion version = CgroupVersion::kV1,
                    bool partitions = false, std::shared_ptr<const Topology> topology = nullptr)
      : fixture_(
            std::move(version == CgroupVersion::kV1
                          ? FixtureCgroupFs::createV1(tmp_.sub("fx"), *CpuSet::parse("0-7"), *CpuSet::parse("0-1"))
                          : FixtureCgroupFs::createV2(tmp_.sub("fx"), *CpuSet::parse("0-7"), *CpuSet::parse("0-1")))
                .value()),
        fs(fixture_),
        store(memory_),
        log_(LogLevel::kError) {
    topology_ = topology ? std::move(topology)
                         : std::make_shared<const Topology>(std::move(loadSyntheticTopology(kTopology)).value());
    LedgerConfig config;
    config.pool.reserved.count = 1;
    config.allocatableMemoryBytes = 16ULL << 30;
    ledger = std::move(Ledger::open(topology_, config, std::make_unique<Forwarding>(store))).value();
    layout.libvirt = LibvirtLayout::kNoSystemd;
    layout.ownership = ownership;
    if (partitions) fixture_.emulateCpusetPartitions();
    layout.cpusetPartitions = partitions;
    const bool v1 = version == CgroupVersion::kV1;
    for (const char* h : {"cpuset", "cpu,cpuacct"}) {
      if (!v1) break;  // v2: kubepods is VRI's to make; no VMs
      EXPECT_TRUE(fixture_.mkdir({h, *CgroupPath::parse("machine")}).ok());
      if (ownership != Ownership::kEverything) {
        for (const char* path : {"kubepods", "kubepods/burstable", "kubepods/besteffort"})
          EXPECT_TRUE(fixture_.mkdir({h, *CgroupPath::parse(path)}).ok());
      }
    }
    for (const char* path : {"machine", "kubepods", "kubepods/burstable", "kubepods/besteffort"}) {
      if (!v1 || !fixture_.exists({"cpuset", *CgroupPath::parse(path)})) continue;
      EXPECT_TRUE(fixture_.write({"cpuset", *CgroupPath::parse(path)}, "cpuset.mems", "0-1").ok());
      EXPECT_TRUE(fixture_.write({"cpuset", *CgroupPath::parse(path)}, "cpuset.cpus", "0-7").ok());
    }
    NodeAllocatable allocatable;
    allocatable.allocatableCpuMilli = 7000;
    sync = std::make_unique<CgroupSync>(
        fs,
        v1 ? makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}, {"cpuacct", "cpu,cpuacct"}})
           : makeV2Backend(),
        layout, allocatable, topology_, 1000, std::vector<std::string>{"cpuset", "cpu", "cpuacct"});
    NodeManagerOptions options;
    options.retryInterval = kRetryInterval;
    options.releaseGrace = std::chrono::seconds(60);
    options.clock = &clock;
    // A memory move's pages are the stand-in's, and its pauses move the clock.
    options.pageMigration = &pages;
    options.sleepUntil = [this](Clock::TimePoint when) { clock.advanceTo(when); };
    node = std::make_unique<NodeManager>(*ledger, *sync, events, log_, NodeFacts{}, options);
    events_ = events.subscribe();
    EXPECT_TRUE(node->startUp().ok());
  }

  // A QEMU process whose cgroups libvirt made (no systemd layout).
  void fakeQemu(const std::string& scope, int pid, int vcpus) {
    if (fixture_.version() == CgroupVersion::kV2) return fakeQemuV2(scope, pid, vcpus);
    const CgroupPath base = *CgroupPath::parse(scope);
    std::vector<CgroupPath> groups = {base, *base.child("emulator")};
    for (int i = 0; i < vcpus; ++i) groups.push_back(*base.child("vcpu" + std::to_string(i)));
    for (const CgroupPath& group : groups) {
      for (const std::string h : {"cpuset", "cpu,cpuacct"}) ASSERT_TRUE(fixture_.mkdir({h, group}).ok());
      ASSERT_TRUE(fixture_.write({"cpuset", group}, "cpuset.mems", "0-1").ok());
      StatePtr now = ledger->state();
      ASSERT_TRUE(fixture_.write({"cpuset", group}, "cpuset.cpus", now->shared().format()).ok());
    }
    ASSERT_TRUE(fixture_
                    .setProcFile(std::to_string(pid) + "/cgroup",
                                 "4:cpuset:/" + scope + "/emulator\n3:cpu,cpuacct:/" + scope + "/emulator\n")
                    .ok());
  }

  // The same on v2: the scope's thread groups threaded, each made as wide as its parent, as libvirt does.
  void fakeQemuV2(const std::string& scope, int pid, int vcpus) {
    const CgroupPath base = *CgroupPath::parse(scope);
    const auto make = [&](const CgroupPath& path) {
      ASSERT_TRUE(fixture_.write({"", path.parent()}, "cgroup.subtree_control", "+cpu +cpuset").ok()) << path.str();
      ASSERT_TRUE(fixture_.mkdir({"", path}).ok()) << path.str();
    };
    if (!fixture_.exists({"", base.parent()})) make(base.parent());
    make(base);
    std::vector<CgroupPath> threads = {*base.child("emulator")};
    for (int i = 0; i < vcpus; ++i) threads.push_back(*base.child("vcpu" + std::to_string(i)));
    for (const CgroupPath& group : threads) {
      make(group);
      ASSERT_TRUE(fixture_.write({"", group}, "cgroup.type", "threaded").ok()) << group.str();
    }
    ASSERT_TRUE(fixture_.setProcFile(std::to_string(pid) + "/cgroup", "0::/" + scope + "/emulator\n").ok());
  }

  // A QEMU process the scan recognises: in its emulator group, with -uuid on its command line.
  void runQemu(const std::string& scope, int pid, const std::string& uuid) {
    fakeQemu(scope, pid, 1);
    ASSERT_TRUE(fixture_.write({"cpuset", *CgroupPath::parse(scope + "/emulator")}, "tasks", std::to_string(pid)).ok());
    std::string cmdline;
    for (const std::string& arg : {std::string("/usr/bin/qemu-system-x86_64"), std::string("-uuid"), uuid})
      cmdline += arg + '\0';
    ASSERT_TRUE(fixture_.setProcFile(std::to_string(pid) + "/cmdline", cmdline).ok());
  }
  // The process exits: the kernel takes it out of its cgroups and /proc.
  void exitQemu(const std::string& scope, int pid) {
    for (const char* file : {"tasks", "cgroup.procs"}) {
      const std::string path = tmp_.sub("fx/cgroup/cpuset/" + scope + "/emulator/") + file;
      if (std::filesystem::exists(path)) std::ofstream(path, std::ios::trunc);
    }
    std::filesystem::remove_all(tmp_.sub("fx/proc/" + std::to_string(pid)));
  }

  // What a full read-and-diff would still write.
  std::vector<CgroupOp> pendingOps() {
    Ledger::Writer writer(*ledger);
    const StatePtr now = writer.current();
    auto plan = sync->reconcile(writer, *now, false, true);
    EXPECT_TRUE(plan.ok()) << plan.error().message();
    return plan.ok() ? plan->operations : std::vector<CgroupOp>{};
  }

  // Moves the clock one retry interval at a time until `done` holds: the retry loop runs only when time moves.
  template <typename Predicate>
  bool retriedUntil(Predicate done) {
    return testing::eventually([&] {
      if (done()) return true;
      clock.advance(kRetryInterval);
      return done();
    });
  }

  bool sawEvent(EventKind kind) {
    Event event;
    while (events_->next(std::chrono::milliseconds(0), event) == EventSubscription::Next::kEvent) {
      if (event.kind == kind) return true;
    }
    return false;
  }

  std::string read(const std::string& path, const char* file = "cpuset.cpus") {
    return fixture_.read({file[0] == 'c' && file[3] == 's' ? "cpuset" : "cpu,cpuacct", *CgroupPath::parse(path)}, file)
        .value();
  }

  FixtureCgroupFs& fixture() { return fixture_; }
  // The fixture's directory: its hierarchies are in cgroup/<hierarchy>/.
  std::string fixtureDir() const { return tmp_.sub("fx"); }

 private:
  // The ledger owns its store; the test keeps the failing one.
  class Forwarding : public LedgerStore {
   public:
    explicit Forwarding(LedgerStore& inner) : inner_(inner) {}
    Result<StoredLedger> load() override { return inner_.load(); }
    Result<std::map<std::string, std::string>> meta() override { return inner_.meta(); }
    Result<void> apply(const LedgerChange& c) override { return inner_.apply(c); }
    Result<void> setMeta(const std::string& k, const std::string& v) override { return inner_.setMeta(k, v); }

   private:
    LedgerStore& inner_;
  };

  testing::TempDir tmp_;
  FixtureCgroupFs fixture_;

 public:
  testing::FailingCgroupFs fs;
  MemoryLedgerStore memory_;
  testing::FailingLedgerStore store;

 private:
  Logger log_;
  std::shared_ptr<const Topology> topology_;
  std::shared_ptr<EventSubscription> events_;

 public:
  TreeLayout layout;
  static constexpr std::chrono::seconds kRetryInterval{1};
  testing::ManualClock clock;   // the node manager's: retries happen when a test moves it
  testing::PagesOnNodes pages;  // where memory moves put pages
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<CgroupSync> sync;
  EventHub events;
  std::unique_ptr<NodeManager> node;
};

inline PodSpec pod(const std::string& uid, QosClass qos) { return {uid, "default/" + uid, qos, 0, 0}; }
inline ContainerSpec exclusive(const std::string& id, int cpus) {
  return {"app", id, false, cpus * 1000, cpus * 1000, 64ULL << 20, std::nullopt};
}
inline ContainerSpec shared(const std::string& id, int64_t milli) {
  return {"app", id, false, milli, 0, std::nullopt, std::nullopt};
}
inline std::string uid(int n) {
  char text[40];
  std::snprintf(text, sizeof text, "1a%06d-0000-4000-8000-000000000000", n);
  return text;
}
inline VmSpec vm(const std::string& uuid, int vcpus, VmCpuPolicy policy) {
  VmSpec spec;
  spec.uuid = uuid;
  spec.cpu.name = "vm-" + uuid.substr(0, 4);
  spec.cpu.vcpus = vcpus;
  spec.cpu.cpuPolicy = policy;
  spec.memoryBytes = 64ULL << 20;
  return spec;
}

}  // namespace vri::testing
