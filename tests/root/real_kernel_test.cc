// The cgroup model on the real kernel (label `root`): a private subtree in the
// v1 cpuset, cpu, cpuacct and pids hierarchies, real processes moved into it,
// and what the kernel then enforces. Only cgroups this test creates are
// touched, always by absolute path; the memory hierarchy is never written
// (every process here lives in a memory cgroup owned by the host's supervisor).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "cgroup-model/drift.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "cgroup-model/node_scan.h"
#include "cgroup-model/node_tree.h"
#include "tests/support/eventually.h"
#include "tests/support/self_children.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr char kVmUuid[] = "5b0c9c1e-8d1f-4f0e-9a57-3c2d1e0f9a8b";
constexpr char kPodUid[] = "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b";

class RealKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
    auto fs = KernelCgroupFs::create("/sys/fs/cgroup");
    ASSERT_TRUE(fs.ok()) << fs.error().message();
    fs_.emplace(std::move(fs).value());
    auto mounts = readCgroupMounts(*fs_);
    ASSERT_TRUE(mounts.ok()) << mounts.error().message();
    std::string missing;
    for (const char* controller : {"cpuset", "cpu", "cpuacct", "pids"}) {
      auto hierarchy = v1Hierarchy(*mounts, controller, "/sys/fs/cgroup");
      if (!hierarchy.ok()) {
        missing += std::string(" ") + controller;
        continue;
      }
      hierarchies_[controller] = *hierarchy;
    }
    ASSERT_TRUE(missing.empty()) << "needs cgroup v1 hierarchies under /sys/fs/cgroup for:" << missing;
    auto online = fs_->read({hierarchies_["cpuset"], {}}, "cpuset.effective_cpus");
    ASSERT_TRUE(online.ok()) << online.error().message();
    const CpuSet cpus = *CpuSet::parse(*online);
    ASSERT_GE(cpus.count(), 2) << "needs at least 2 CPUs, has " << *online;
    shared_ = CpuSet{cpus.first()};
    exclusive_ = CpuSet{(cpus - shared_).first()};
    mems_ = *CpuSet::parse(*fs_->read({hierarchies_["cpuset"], {}}, "cpuset.effective_mems"));

    root_ = *CgroupPath::parse("vri-test-" + std::to_string(::getpid()) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (const auto& [controller, hierarchy] : hierarchies_) {
      ASSERT_TRUE(fs_->mkdir({hierarchy, root_}).ok()) << "mkdir " << hierarchy << "/" << root_.str();
      if (controller == "cpuset") {
        ASSERT_TRUE(fs_->write({hierarchy, root_}, "cpuset.cpus", (shared_ | exclusive_).format()).ok());
        ASSERT_TRUE(fs_->write({hierarchy, root_}, "cpuset.mems", mems_.format()).ok());
      }
    }
    backend_ = makeV1Backend(hierarchies_);
    layout_.ownership = Ownership::kEverything;
    layout_.kubeletParent = root_;
    layout_.machinePartition = *root_.child("machine");
  }

  void TearDown() override {
    for (int pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (!fs_) return;
    for (const auto& [controller, hierarchy] : hierarchies_) removeTree({hierarchy, root_});
    for (const auto& [controller, hierarchy] : hierarchies_) {
      EXPECT_FALSE(fs_->exists({hierarchy, root_})) << "left behind: " << hierarchy << "/" << root_.str();
    }
  }

  void removeTree(const CgroupDir& dir) {
    if (!fs_->exists(dir)) return;
    auto names = fs_->children(dir);
    if (names.ok()) {
      for (const std::string& name : *names) removeTree({dir.hierarchy, *dir.path.child(name)});
    }
    auto removed = fs_->rmdir(dir);
    EXPECT_TRUE(removed.ok()) << removed.error().message();
  }

  // Starts this binary again as a sleeping or spinning child; argv[0] and
  // -uuid make it look like a QEMU process to the scanner.
  int spawn(const char* mode) {
    const pid_t pid = testing::spawnAsQemu(kVmUuid, {mode});
    children_.push_back(pid);
    return pid;
  }

  // Moves a task into `path` in every hierarchy this test uses.
  void move(int pid, const CgroupPath& path, const char* file = "cgroup.procs") {
    for (const auto& [controller, hierarchy] : hierarchies_) {
      auto moved = fs_->write({hierarchy, path}, file, std::to_string(pid));
      ASSERT_TRUE(moved.ok()) << moved.error().message();
    }
  }

  // What libvirt would have made: the scope and its thread groups.
  void makeVmScope(const CgroupPath& scope) {
    for (const CgroupPath& p :
         {layout_.machinePartition, scope, *scope.child("emulator"), *scope.child("vcpu0"), *scope.child("vcpu1")}) {
      for (const auto& [controller, hierarchy] : hierarchies_) {
        if (fs_->exists({hierarchy, p})) continue;
        ASSERT_TRUE(fs_->mkdir({hierarchy, p}).ok());
        if (controller == "cpuset") {
          ASSERT_TRUE(fs_->write({hierarchy, p}, "cpuset.cpus", (shared_ | exclusive_).format()).ok());
          ASSERT_TRUE(fs_->write({hierarchy, p}, "cpuset.mems", mems_.format()).ok());
        }
      }
    }
  }

  std::string read(const char* controller, const CgroupPath& path, const char* file) {
    auto text = fs_->read({hierarchies_[controller], path}, file);
    EXPECT_TRUE(text.ok()) << text.error().message();
    return text.ok() ? *text : "";
  }

  Result<DesiredTree> tree(const CpuSet& shared, std::optional<CpuSet> podExclusive, std::optional<int> vcpu0) {
    std::vector<PodCgroup> pods = {
        {kPodUid, QosClass::kBurstable, {{"web", 250, 500, std::nullopt, std::nullopt, std::nullopt}}, 0, 0, {}}};
    if (podExclusive) {
      pods.push_back(
          {"g1", QosClass::kGuaranteed, {{"app", 1000, 1000, std::nullopt, podExclusive, std::nullopt}}, 0, 0, {}});
    }
    VmCgroup vm;
    vm.scope = scope();
    vm.cpuRequestMilli = 1000;
    vm.vcpuCpus = {{0, vcpu0}, {1, std::nullopt}};
    NodeResources node{shared, mems_, 2000, 0, {}, {}, {}};
    return buildDesiredTree(layout_, node, pods, {vm});
  }

  CgroupPath scope() const { return *layout_.machinePartition.child("qemu-1-vm1.libvirt-qemu"); }
  CgroupPath web() const { return *CgroupPath::parse(root_.str() + "/kubepods/burstable/pod" + kPodUid + "/web"); }

  std::optional<KernelCgroupFs> fs_;
  std::map<std::string, std::string> hierarchies_;
  std::unique_ptr<CgroupBackend> backend_;
  TreeLayout layout_;
  CgroupPath root_;
  CpuSet shared_, exclusive_, mems_;
  std::vector<int> children_;
};

TEST_F(RealKernelTest, TheKernelEnforcesWhatTheModelApplies) {
  makeVmScope(scope());
  CgroupApplier applier(*fs_, *backend_);
  auto first = tree(shared_, exclusive_, std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto applied = applier.apply(*first);
  ASSERT_TRUE(applied.ok()) << applied.error().message();

  const int busy = spawn("--vri-busy");
  const int vcpu = spawn("--vri-sleeper");
  move(busy, web());
  move(vcpu, *scope().child("vcpu0"), "tasks");
  const CgroupPath app = *CgroupPath::parse(root_.str() + "/kubepods/podg1/app");
  EXPECT_EQ(read("cpuset", web(), "cpuset.effective_cpus"), shared_.format());
  EXPECT_EQ(read("cpuset", app, "cpuset.effective_cpus"), exclusive_.format());
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), shared_.format());
  EXPECT_EQ(read("cpu", web(), "cpu.shares"), "256");
  EXPECT_EQ(read("cpu", web(), "cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(read("cpu", web(), "cpu.cfs_period_us"), "100000");
  // The busy process is accounted here.
  EXPECT_TRUE(testing::eventually([&] { return std::stoull(read("cpuacct", web(), "cpuacct.usage")) > 0; }));

  // The exclusive CPU moves from the Guaranteed pod (now gone) to vCPU 0.
  auto second = tree(shared_, std::nullopt, exclusive_.first());
  ASSERT_TRUE(applier.apply(*second).ok());
  EXPECT_FALSE(fs_->exists({hierarchies_["cpuset"], app}));
  EXPECT_EQ(read("cpuset", *scope().child("vcpu0"), "cpuset.effective_cpus"), exclusive_.format());
  EXPECT_EQ(testing::statusField(vcpu, "Cpus_allowed_list"), exclusive_.format());
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), shared_.format());

  // The shared pool grows over both CPUs: every shared task may use them.
  auto third = tree(shared_ | exclusive_, std::nullopt, std::nullopt);
  ASSERT_TRUE(applier.apply(*third).ok());
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), (shared_ | exclusive_).format());
  EXPECT_EQ(testing::statusField(vcpu, "Cpus_allowed_list"), (shared_ | exclusive_).format());
  EXPECT_TRUE(applier.plan(*third)->empty());
  EXPECT_TRUE(detectDrift(*fs_, *backend_, *third)->empty());

  // Scanning the live tree finds the pod, the VM by its process, and their tasks.
  makeVmScope(scope());
  const int qemu = spawn("--vri-sleeper");
  move(qemu, *scope().child("emulator"));
  auto scan = scanNode(*fs_, *backend_, layout_);
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  ASSERT_EQ(scan->pods.size(), 1u);
  EXPECT_EQ(scan->pods[0].uid, kPodUid);
  ASSERT_EQ(scan->pods[0].containers.size(), 1u);
  EXPECT_EQ(scan->pods[0].containers[0].cgroup.tasks, std::vector<int>{busy});
  ASSERT_EQ(scan->vms.size(), 1u);
  EXPECT_EQ(scan->vms[0].qemuPid, qemu);
  EXPECT_EQ(scan->vms[0].uuid, kVmUuid);
  EXPECT_TRUE(scan->notes.empty()) << scan->notes.front();
}

TEST_F(RealKernelTest, KernelRefusalsComeBackWithTheirErrno) {
  const CgroupDir group{hierarchies_["cpuset"], *root_.child("g")};
  ASSERT_TRUE(fs_->mkdir(group).ok());
  auto backwards = fs_->write(group, "cpuset.cpus", "3-1");
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.error().sysErrno(), EINVAL);
  EXPECT_EQ(backwards.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(backwards.error().message(), HasSubstr("/sys/fs/cgroup/" + hierarchies_["cpuset"] + "/" + root_.str() +
                                                     "/g/cpuset.cpus: Invalid argument"));
  EXPECT_EQ(*fs_->read(group, "cpuset.cpus"), "");  // unchanged
  // A task cannot join a cpuset without CPUs.
  const int sleeper = spawn("--vri-sleeper");
  EXPECT_EQ(fs_->write(group, "cgroup.procs", std::to_string(sleeper)).error().sysErrno(), ENOSPC);
  // Outside the parent: the v1 kernel answers EACCES.
  ASSERT_TRUE(fs_->write({hierarchies_["cpuset"], root_}, "cpuset.cpus", shared_.format()).ok());
  EXPECT_EQ(fs_->write(group, "cpuset.cpus", exclusive_.format()).error().sysErrno(), EACCES);
  // Removing a busy group fails cleanly and leaves it as it was.
  ASSERT_TRUE(fs_->write(group, "cpuset.cpus", shared_.format()).ok());
  ASSERT_TRUE(fs_->write(group, "cpuset.mems", mems_.format()).ok());
  ASSERT_TRUE(fs_->write(group, "cgroup.procs", std::to_string(sleeper)).ok());
  auto busy = fs_->rmdir(group);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().sysErrno(), EBUSY);
  EXPECT_TRUE(fs_->exists(group));
  EXPECT_EQ(*fs_->read(group, "tasks"), std::to_string(sleeper));
}

TEST_F(RealKernelTest, AnApplyThatHitsABusyGroupConvergesOnceItIsFree) {
  makeVmScope(scope());
  CgroupApplier applier(*fs_, *backend_);
  auto with_pod = tree(shared_, exclusive_, std::nullopt);
  ASSERT_TRUE(applier.apply(*with_pod).ok());
  const CgroupPath app = *CgroupPath::parse(root_.str() + "/kubepods/podg1/app");
  const int worker = spawn("--vri-sleeper");
  move(worker, app);
  auto without_pod = tree(shared_, std::nullopt, std::nullopt);
  auto refused = applier.apply(*without_pod);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().sysErrno(), EBUSY);
  EXPECT_THAT(refused.error().message(), HasSubstr("rmdir"));
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  children_.clear();
  auto converged = applier.apply(*without_pod);
  ASSERT_TRUE(converged.ok()) << converged.error().message();
  EXPECT_TRUE(applier.plan(*without_pod)->empty());
}

}  // namespace
}  // namespace vri

int main(int argc, char** argv) {
  vri::testing::runChildMode(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
