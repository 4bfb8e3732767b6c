// A whole vrid in the test process: a real sqlite ledger, a synthetic topology
// (8 CPUs on two nodes unless given), the cgroupfs fixture (v1) and real gRPC servers on unix
// sockets in a temporary directory. Restartable on the same state and fixture.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "accounting/hwloc_topology.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/temp_dir.h"
#include "vri/daemon.h"

namespace vri::testing {

inline constexpr char kTopology[] = "pack:1 numa:2(memory=8GiB) core:2 pu:2";  // CPUs 0-7, nodes 0-1

class DaemonHarness {
 public:
  // `topology`: a synthetic description whose CPUs are `cpus` and NUMA nodes `mems` (the fixture's root).
  explicit DaemonHarness(const std::string& topology = kTopology, const std::string& cpus = "0-7",
                         const std::string& mems = "0-1")
      : logFile_(std::fopen(tmp_.sub("vrid.log").c_str(), "a")),
        log_(LogLevel::kWarning, logFile_),
        cpus_(cpus),
        mems_(mems) {
    fs_ = std::make_unique<FixtureCgroupFs>(
        std::move(FixtureCgroupFs::createV1(tmp_.sub("fx"), *CpuSet::parse(cpus), *CpuSet::parse(mems))).value());
    std::string mountinfo = "30 1 0:27 / " + tmp_.sub("fx/cgroup") + " rw - tmpfs tmpfs rw\n";
    int id = 40;
    for (const char* h : {"cpuset", "cpu,cpuacct", "memory", "hugetlb", "pids"}) {
      mountinfo += std::to_string(id) + " 30 0:" + std::to_string(id) + " / " + tmp_.sub("fx/cgroup/") + h +
                   " rw - cgroup cgroup rw," + h + "\n";
      ++id;
    }
    EXPECT_TRUE(fs_->setProcFile("self/mountinfo", mountinfo).ok());
    config = defaultConfig();
    config.cgroupRoot = tmp_.sub("fx/cgroup");
    config.topology = "synthetic:" + topology;
    config.stateDir = tmp_.sub("state");
    config.kubeletRootDir = tmp_.sub("kubelet");  // kubelet's checkpoints: none, whatever this host runs
    config.socket = tmp_.sub("run/vri.sock");
    config.adminSocket = tmp_.sub("run/admin.sock");
    config.layout.libvirt = LibvirtLayout::kNoSystemd;
    config.layout.machinePartition = *CgroupPath::parse("machine");
    config.layout.ownership = Ownership::kEverything;
    config.vmMemoryOverheadBytes = 0;
    config.reconcileIntervalSeconds = 0;
    config.usageIntervalMs = 0;  // the usage tests turn it on (its thread would wait on a test clock too)
    config.logLevel = LogLevel::kWarning;
    config.libvirtUri = "";  // the libvirt side has its own tests
  }
  ~DaemonHarness() {
    stop();
    std::fclose(logFile_);
  }
  // What vrid logged (warnings and errors) since the harness was made.
  std::string logText() const {
    std::fflush(logFile_);
    std::ifstream in(tmp_.sub("vrid.log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  ::testing::AssertionResult start() {
    auto started = Daemon::start(config, cgroupFs != nullptr ? *cgroupFs : *fs_, log_, topology, *clock);
    if (!started.ok()) return ::testing::AssertionFailure() << started.error().message();
    daemon_ = std::move(*started);
    admin = v1::Vri::NewStub(channel(config.adminSocket));
    readOnly = v1::Vri::NewStub(channel(config.socket));
    return ::testing::AssertionSuccess();
  }
  void stop() {
    if (daemon_) daemon_->shutdown(std::chrono::seconds(2));
    daemon_.reset();
  }
  ::testing::AssertionResult restart() {
    stop();
    return start();
  }

  static std::shared_ptr<grpc::Channel> channel(const std::string& socket) {
    return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  }

  // A QEMU process of `uuid` whose cgroups libvirt made (no systemd layout).
  void fakeQemu(const std::string& scope, int pid, const std::string& uuid, int vcpus) {
    std::vector<int> ids;
    for (int i = 0; i < vcpus; ++i) ids.push_back(i);
    fakeQemu(scope, pid, uuid, ids);
  }
  // The same with the vCPUs that run named by id (libvirt makes vcpuN for the online ones only).
  void fakeQemu(const std::string& scope, int pid, const std::string& uuid, const std::vector<int>& vcpuIds) {
    const CgroupPath base = *CgroupPath::parse(scope);
    std::vector<CgroupPath> groups = {base.parent(), base, *base.child("emulator")};
    for (int i : vcpuIds) groups.push_back(*base.child("vcpu" + std::to_string(i)));
    for (const CgroupPath& group : groups) {
      if (fs_->exists({"cpuset", group})) continue;  // libvirt writes only the cgroups it makes
      for (const std::string h : {"cpuset", "cpu,cpuacct"}) {
        if (!fs_->exists({h, group})) {
          ASSERT_TRUE(fs_->mkdir({h, group}).ok()) << group.str();
        }
      }
      // As libvirt does: a new cgroup gets its parent's cpuset (the root's for the machine partition).
      const auto parent_cpus = fs_->read({"cpuset", group.parent()}, "cpuset.cpus");
      const auto parent_mems = fs_->read({"cpuset", group.parent()}, "cpuset.mems");
      const bool inherit = !group.parent().isRoot() && parent_cpus.ok() && parent_mems.ok();
      ASSERT_TRUE(fs_->write({"cpuset", group}, "cpuset.mems", inherit ? *parent_mems : mems_).ok());
      ASSERT_TRUE(fs_->write({"cpuset", group}, "cpuset.cpus", inherit ? *parent_cpus : cpus_).ok());
    }
    ASSERT_TRUE(fs_->write({"cpuset", *base.child("emulator")}, "tasks", std::to_string(pid)).ok());
    ASSERT_TRUE(fs_->setProcFile(std::to_string(pid) + "/cgroup",
                                 "4:cpuset:/" + scope + "/emulator\n3:cpu,cpuacct:/" + scope + "/emulator\n")
                    .ok());
    std::string cmdline;
    for (const std::string& a : {std::string("/usr/bin/qemu-system-x86_64"), std::string("-uuid"), uuid})
      cmdline += a + '\0';
    ASSERT_TRUE(fs_->setProcFile(std::to_string(pid) + "/cmdline", cmdline).ok());
  }

  // That QEMU process exits: its scope stays behind without a task, its /proc entry goes.
  void exitQemu(const std::string& scope, int pid) {
    for (const char* file : {"tasks", "cgroup.procs"}) {
      const std::string path = tmp_.sub("fx/cgroup/cpuset/" + scope + "/emulator/") + file;
      if (std::filesystem::exists(path)) std::ofstream(path, std::ios::trunc);
    }
    std::filesystem::remove_all(tmp_.sub("fx/proc/" + std::to_string(pid)));
  }

  FixtureCgroupFs& fs() { return *fs_; }
  Daemon& daemon() { return *daemon_; }
  const TempDir& tmp() const { return tmp_; }

  DaemonConfig config;
  const Clock* clock = &steadyClock();       // a test's own must outlive the harness
  CgroupFs* cgroupFs = nullptr;              // set: what vrid writes through (a decorator of fs()) instead
  std::shared_ptr<const Topology> topology;  // set: instead of config.topology
  std::unique_ptr<v1::Vri::Stub> admin, readOnly;

 private:
  TempDir tmp_;
  std::FILE* logFile_;
  Logger log_;
  std::string cpus_, mems_;  // the fixture's root cpuset
  std::unique_ptr<FixtureCgroupFs> fs_;
  std::unique_ptr<Daemon> daemon_;
};

}  // namespace vri::testing
