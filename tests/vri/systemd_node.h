// A vrid core (NodeManager, CgroupSync) on a systemd node: cgroup v2 fixture,
// kubelet's systemd driver, machine.slice, and systemd a recording SystemdUnits.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "accounting/sqlite_ledger_store.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "systemd/systemd_cgroupfs.h"
#include "tests/support/temp_dir.h"
#include "vri/cgroup_sync.h"
#include "vri/node_manager.h"

namespace vri {

class RecordingUnits : public SystemdUnits {
 public:
  Result<void> setProperties(const std::string& unit, const std::vector<UnitProperty>& properties) override {
    if (refuse) return Error(ErrorCode::kDeadlineExceeded, "systemd did not answer in time");
    for (const UnitProperty& p : properties) calls.push_back(unit + " " + p.describe());
    return {};
  }
  std::vector<std::string> calls;  // "kubepods.slice AllowedCPUs=1-7"
  bool refuse = false;
};

inline std::string podUid(int n) {
  char text[64];
  std::snprintf(text, sizeof text, "5c%06d-0000-4000-8000-000000000000", n);
  return text;
}

class SystemdNode {
 public:
  SystemdNode()
      : fixture_(
            std::move(FixtureCgroupFs::createV2(tmp_.sub("fx"), *CpuSet::parse("0-7"), *CpuSet::parse("0-1"))).value()),
        log_(LogLevel::kError) {
    layout.driver = KubeletDriver::kSystemd;
    layout.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
    layout.machinePartition = *CgroupPath::parse("machine.slice");
    layout.ownership = Ownership::kCpusetsAndMachine;
    layout.systemdUnits = true;
    EXPECT_TRUE(fixture_.write({"", CgroupPath()}, "cgroup.subtree_control", "+cpuset +cpu").ok());
    // What kubelet's and machined's units made before vrid: kubepods, its QoS slices, machine.slice.
    for (const char* path : {"kubepods.slice", "kubepods.slice/kubepods-burstable.slice",
                             "kubepods.slice/kubepods-besteffort.slice", "machine.slice"})
      mkdir(path);
    topology_ = std::make_shared<const Topology>(
        std::move(loadSyntheticTopology("pack:1 numa:2(memory=8GiB) core:2 pu:2")).value());
    LedgerConfig config;
    config.pool.reserved.count = 1;
    config.allocatableMemoryBytes = 16ULL << 30;
    ledger = std::move(Ledger::open(topology_, config,
                                    std::move(SqliteLedgerStore::open(tmp_.sub("ledger.sqlite"), Durability::kNormal,
                                                                      LedgerFile::kCreateIfAbsent))
                                        .value()))
                 .value();
    systemdFs_ = std::make_unique<SystemdCgroupFs>(fixture_, units, layout);
    restart();
  }
  // A new vrid core on the same ledger and cgroups.
  void restart() {
    node.reset();
    NodeAllocatable allocatable;
    allocatable.allocatableCpuMilli = 7000;
    sync_ = std::make_unique<CgroupSync>(*systemdFs_, makeV2Backend(), layout, allocatable, topology_, 1000,
                                         std::vector<std::string>{"cpuset", "cpu"}, systemdFs_.get());
    node = std::make_unique<NodeManager>(*ledger, *sync_, events_, log_, NodeFacts{}, NodeManagerOptions{});
    auto started = node->startUp();
    EXPECT_TRUE(started.ok()) << started.error().message();
  }

  void mkdir(const std::string& path) {
    const CgroupPath p = *CgroupPath::parse(path);
    ASSERT_TRUE(fixture_.mkdir({"", p}).ok()) << path;
    auto delegated = fixture_.write({"", p}, "cgroup.subtree_control", "+cpuset +cpu");
    ASSERT_TRUE(delegated.ok()) << path << ": " << delegated.error().message();
  }
  // A BestEffort pod whose slice and container scope runc made, admitted on the shared pool.
  void runBestEffortPod(int n) {
    const std::string uid = podUid(n), id = "c" + std::to_string(n);
    mkdir(podSlice(n).str());
    mkdir(namer_->container(QosClass::kBestEffort, uid, id)->str());
    auto admitted = node->admitContainer({uid, "default/be" + std::to_string(n), QosClass::kBestEffort, 0, 0},
                                         {"app", id, false, 0, 0, std::nullopt, std::nullopt});
    ASSERT_TRUE(admitted.ok()) << admitted.error().message();
  }
  CgroupPath podSlice(int n) const { return *namer_->pod(QosClass::kBestEffort, podUid(n)); }
  Result<ContainerPlacement> admitExclusive(int n, int cpus) {
    return node->admitContainer({podUid(900000 + n), "default/g", QosClass::kGuaranteed, 0, 0},
                                {"app", "", false, cpus * 1000, cpus * 1000, 64 << 20, std::nullopt});
  }
  std::string file(const std::string& path, const char* name = "cpuset.cpus") {
    auto value = fixture_.read({"", *CgroupPath::parse(path)}, name);
    return value.ok() ? *value : "<none: " + value.error().message() + ">";
  }

  FixtureCgroupFs& fixture() { return fixture_; }

  TreeLayout layout;
  RecordingUnits units;
  std::unique_ptr<Ledger> ledger;
  std::unique_ptr<NodeManager> node;

 private:
  testing::TempDir tmp_;
  FixtureCgroupFs fixture_;
  Logger log_;
  EventHub events_;
  std::shared_ptr<const Topology> topology_;
  std::unique_ptr<SystemdCgroupFs> systemdFs_;
  std::unique_ptr<CgroupSync> sync_;
  std::unique_ptr<KubeletNamer> namer_ = makeKubeletNamer(KubeletDriver::kSystemd);
};

}  // namespace vri
