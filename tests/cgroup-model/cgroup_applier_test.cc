// The apply engine against the kernel-rule fixture, for both cgroup versions.
#include "cgroup-model/cgroup_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/failing_cgroupfs.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

CgroupPath path(const char* text) { return *CgroupPath::parse(text); }
CpuSet cpus(const char* list) { return *CpuSet::parse(list); }

const std::map<std::string, std::string> kV1Hierarchies = {
    {"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}, {"memory", "memory"}, {"hugetlb", "hugetlb"}, {"pids", "pids"}};

CgroupSpec spec(const char* cpu_list, std::optional<uint64_t> shares = std::nullopt) {
  CgroupSpec s;
  s.settings.cpus = cpus(cpu_list);
  s.settings.mems = cpus("0");
  if (shares) s.settings.shares = CpuShares{*shares};
  return s;
}

// A small node: kubepods with a Burstable pod of two containers and a
// Guaranteed pod with exclusive CPUs, beside a VM with two vCPUs.
DesiredTree nodeTree(const char* shared, const char* exclusive_pod, const char* vm_vcpu1) {
  DesiredTree tree;
  tree.managedRoots = {path("kubepods"), path("machine")};
  const std::string all = (cpus(shared) | cpus(exclusive_pod) | cpus(vm_vcpu1)).format();
  tree.cgroups[path("kubepods")] = spec((cpus(shared) | cpus(exclusive_pod)).format().c_str(), 8192);
  tree.cgroups[path("kubepods/burstable")] = spec(shared, 1024);
  tree.cgroups[path("kubepods/burstable/podb")] = spec(shared, 1024);
  tree.cgroups[path("kubepods/burstable/podb")].settings.memoryMax = Limit{1ULL << 30};
  tree.cgroups[path("kubepods/burstable/podb/c1")] = spec(shared, 512);
  tree.cgroups[path("kubepods/burstable/podb/c1")].settings.cpuMax = CpuMax{50000, 100000};
  tree.cgroups[path("kubepods/burstable/podb/c2")] = spec(shared, 512);
  tree.cgroups[path("kubepods/podg")] = spec((cpus(shared) | cpus(exclusive_pod)).format().c_str(), 2048);
  tree.cgroups[path("kubepods/podg/app")] = spec(exclusive_pod, 2048);
  tree.cgroups[path("machine")] = spec((cpus(shared) | cpus(vm_vcpu1)).format().c_str(), 1024);
  tree.cgroups[path("machine/vm1")] = spec((cpus(shared) | cpus(vm_vcpu1)).format().c_str(), 1024);
  tree.cgroups[path("machine/vm1/vcpu0")] = spec(shared);
  tree.cgroups[path("machine/vm1/vcpu1")] = spec(vm_vcpu1);
  tree.cgroups[path("machine/vm1/emulator")] = spec(shared);
  (void)all;
  return tree;
}

DesiredTree threaded(DesiredTree tree) {
  for (auto& [p, s] : tree.cgroups) {
    if (p.depth() == 3 && p.isWithin(path("machine"))) s.threaded = true;
  }
  return tree;
}

struct Node {
  testing::TempDir tmp;
  FixtureCgroupFs fs;
  std::unique_ptr<CgroupBackend> backend;
  explicit Node(CgroupVersion version)
      : fs(std::move(version == CgroupVersion::kV1 ? FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-7"), cpus("0"))
                                                   : FixtureCgroupFs::createV2(tmp.sub("fx"), cpus("0-7"), cpus("0")))
               .value()),
        backend(version == CgroupVersion::kV1 ? makeV1Backend(kV1Hierarchies) : makeV2Backend()) {}
};

class CgroupApplierTest : public ::testing::TestWithParam<CgroupVersion> {};

TEST_P(CgroupApplierTest, BuildsTheTreeAndThenHasNothingToDo) {
  Node s(GetParam());
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree tree = threaded(nodeTree("0-3", "4-5", "6"));
  auto planned = applier.plan(tree);
  ASSERT_TRUE(planned.ok()) << planned.error().message();
  EXPECT_EQ(s.fs.writes() + s.fs.mkdirs(), 0);  // a dry run changes nothing
  auto applied = applier.apply(tree);
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  EXPECT_EQ(applied->size(), planned->size());
  const std::string h = GetParam() == CgroupVersion::kV1 ? "cpuset" : "";
  EXPECT_EQ(*s.fs.read({h, path("kubepods/podg/app")}, "cpuset.cpus"), "4-5");
  EXPECT_EQ(*s.fs.read({h, path("machine/vm1/vcpu1")}, "cpuset.cpus"), "6");
  if (GetParam() == CgroupVersion::kV1) {
    EXPECT_EQ(*s.fs.read({"cpu,cpuacct", path("kubepods/burstable/podb/c1")}, "cpu.cfs_quota_us"), "50000");
    EXPECT_EQ(*s.fs.read({"memory", path("kubepods/burstable/podb")}, "memory.limit_in_bytes"), "1073741824");
  } else {
    EXPECT_EQ(*s.fs.read({"", path("kubepods/burstable/podb/c1")}, "cpu.max"), "50000 100000");
    EXPECT_EQ(*s.fs.read({"", path("kubepods/burstable/podb/c1")}, "cpu.weight"), "59");
    EXPECT_EQ(*s.fs.read({"", path("machine/vm1/vcpu0")}, "cgroup.type"), "threaded");
  }
  const int writes = s.fs.writes();
  auto again = applier.apply(tree);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty()) << again->front().describe();
  EXPECT_EQ(s.fs.writes(), writes);
}

TEST_P(CgroupApplierTest, ShrinkingTheSharedPoolWritesEachChangedCgroupOnce) {
  Node s(GetParam());
  CgroupApplier applier(s.fs, *s.backend);
  ASSERT_TRUE(applier.apply(nodeTree("0-5", "6", "7")).ok());
  // CPU 5 leaves the shared pool for the Guaranteed pod.
  const DesiredTree shrunk = nodeTree("0-4", "5-6", "7");
  auto plan = applier.plan(shrunk);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  // Changed: burstable, podb, c1, c2, podg/app (5-6), machine, vm1, vcpu0, emulator. Unchanged: kubepods, podg.
  EXPECT_EQ(plan->size(), 9u);
  for (const CgroupOp& op : *plan) {
    EXPECT_EQ(op.kind, CgroupOp::Kind::kWrite);
    EXPECT_EQ(op.file, "cpuset.cpus");
  }
  ASSERT_TRUE(applier.apply(shrunk).ok());
  EXPECT_TRUE(applier.plan(shrunk)->empty());
}

TEST_P(CgroupApplierTest, RemovesWhatIsNoLongerWantedDeepestFirst) {
  Node s(GetParam());
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree tree = nodeTree("0-3", "4-5", "6");
  ASSERT_TRUE(applier.apply(tree).ok());
  tree.cgroups.erase(path("kubepods/burstable/podb/c1"));
  tree.cgroups.erase(path("kubepods/burstable/podb/c2"));
  tree.cgroups.erase(path("kubepods/burstable/podb"));
  auto ops = applier.apply(tree);
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  std::vector<std::string> removed;
  for (const CgroupOp& op : *ops) {
    if (op.kind == CgroupOp::Kind::kRmdir) removed.push_back(op.dir.path.str());
  }
  ASSERT_FALSE(removed.empty());
  EXPECT_EQ(removed.back(), "kubepods/burstable/podb");
  const std::string h = GetParam() == CgroupVersion::kV1 ? "cpuset" : "";
  EXPECT_FALSE(s.fs.exists({h, path("kubepods/burstable/podb")}));
  EXPECT_TRUE(applier.plan(tree)->empty());
}

// A large change interrupted at every possible step converges on the next run.
TEST_P(CgroupApplierTest, ConvergesAfterAFailureAtEveryStep) {
  const DesiredTree before = threaded(nodeTree("0-5", "6", "7"));
  DesiredTree after = threaded(nodeTree("2-7", "0-1", ""));
  after.cgroups.erase(path("kubepods/burstable/podb/c2"));
  after.cgroups[path("kubepods/besteffort")] = spec("2-7", 2);
  after.cgroups[path("kubepods/besteffort/pode")] = spec("2-7", 2);
  size_t steps = 0;
  {
    Node s(GetParam());
    CgroupApplier applier(s.fs, *s.backend);
    ASSERT_TRUE(applier.apply(before).ok());
    steps = applier.plan(after)->size();
  }
  ASSERT_GT(steps, 20u);
  for (size_t fail_at = 0; fail_at < steps; ++fail_at) {
    Node s(GetParam());
    ASSERT_TRUE(CgroupApplier(s.fs, *s.backend).apply(before).ok());
    testing::FailingCgroupFs failing(s.fs, static_cast<int>(fail_at));
    auto interrupted = CgroupApplier(failing, *s.backend).apply(after);
    ASSERT_FALSE(interrupted.ok()) << "step " << fail_at;
    EXPECT_EQ(interrupted.error().sysErrno(), EIO);
    EXPECT_THAT(interrupted.error().message(), HasSubstr("apply step " + std::to_string(fail_at + 1) + " of"));
    CgroupApplier applier(s.fs, *s.backend);
    auto resumed = applier.apply(after);
    ASSERT_TRUE(resumed.ok()) << "after failing at step " << fail_at << ": " << resumed.error().message();
    auto left = applier.plan(after);
    ASSERT_TRUE(left.ok());
    EXPECT_TRUE(left->empty()) << "after failing at step " << fail_at << ": " << left->front().describe();
  }
}

TEST_P(CgroupApplierTest, RefusesBadTreesBeforeTouchingAnything) {
  Node s(GetParam());
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree outside = nodeTree("0-3", "4-5", "6");
  outside.cgroups[path("system.slice")] = spec("0");
  EXPECT_THAT(applier.apply(outside).error().message(), HasSubstr("outside every managed root"));
  DesiredTree orphan = nodeTree("0-3", "4-5", "6");
  orphan.cgroups[path("kubepods/nowhere/x")] = spec("0");
  EXPECT_THAT(applier.apply(orphan).error().message(), HasSubstr("has no parent in the desired tree"));
  if (GetParam() == CgroupVersion::kV1) {
    DesiredTree escaping = nodeTree("0-3", "4-5", "6");
    escaping.cgroups[path("kubepods/burstable/podb/c1")] = spec("7");
    EXPECT_THAT(applier.apply(escaping).error().message(), HasSubstr("is not inside its parent's"));
  }
  EXPECT_EQ(s.fs.writes() + s.fs.mkdirs(), 0);
}

TEST_P(CgroupApplierTest, ABusyCgroupIsReportedAndLeftForTheNextRun) {
  Node s(GetParam());
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree tree = nodeTree("0-3", "4-5", "6");
  ASSERT_TRUE(applier.apply(tree).ok());
  const std::string h = GetParam() == CgroupVersion::kV1 ? "cpuset" : "";
  ASSERT_TRUE(s.fs.write({h, path("kubepods/burstable/podb/c2")}, "cgroup.procs", "999").ok());
  tree.cgroups.erase(path("kubepods/burstable/podb/c2"));
  auto refused = applier.apply(tree);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().sysErrno(), EBUSY);
  EXPECT_THAT(refused.error().message(), HasSubstr("rmdir " + h + ":kubepods/burstable/podb/c2"));
  ASSERT_TRUE(s.fs.write({h, {}}, "cgroup.procs", "999").ok());  // the process leaves
  ASSERT_TRUE(applier.apply(tree).ok());
  EXPECT_TRUE(applier.plan(tree)->empty());
}

TEST_P(CgroupApplierTest, AdoptedSubtreesAreWrittenButNeverCreatedOrRemoved) {
  Node s(GetParam());
  const std::string h = GetParam() == CgroupVersion::kV1 ? "cpuset" : "";
  // kubelet made kubepods and one pod, plus a pod VRI does not know about.
  DesiredTree made_by_kubelet;
  made_by_kubelet.managedRoots = {path("kubepods")};
  made_by_kubelet.cgroups[path("kubepods")] = spec("0-7");
  made_by_kubelet.cgroups[path("kubepods/known")] = spec("0-7");
  made_by_kubelet.cgroups[path("kubepods/stranger")] = spec("0-7");
  ASSERT_TRUE(CgroupApplier(s.fs, *s.backend).apply(made_by_kubelet).ok());

  DesiredTree tree;
  tree.adoptedRoots = {path("kubepods")};
  tree.cgroups[path("kubepods")] = spec("0-7");
  tree.cgroups[path("kubepods/known")] = spec("0-3");
  tree.cgroups[path("kubepods/not-yet")] = spec("4-5");
  tree.cgroups[path("kubepods/not-yet/ctr")] = spec("4-5");
  CgroupApplier applier(s.fs, *s.backend);
  auto ops = applier.apply(tree);
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  ASSERT_EQ(ops->size(), 1u);
  EXPECT_EQ(ops->front().describe(), "write \"0-3\" to " + h + ":kubepods/known/cpuset.cpus");
  EXPECT_FALSE(s.fs.exists({h, path("kubepods/not-yet")}));
  EXPECT_TRUE(s.fs.exists({h, path("kubepods/stranger")}));
}

// The fixture, where the first write into `victim` finds it gone: its owner removed it (in every
// hierarchy) after the plan was made.
class RemovedBeforeItsWrite : public testing::FailingCgroupFs {
 public:
  RemovedBeforeItsWrite(FixtureCgroupFs& fs, CgroupPath victim) : FailingCgroupFs(fs), fs_(fs), victim_(victim) {}
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override {
    if (dir.path == victim_ && !removed_) {
      removed_ = true;
      for (const FixtureHierarchy& h : fs_.hierarchies()) (void)fs_.rmdir({h.name, victim_});
    }
    return FailingCgroupFs::write(dir, file, value);
  }

 private:
  FixtureCgroupFs& fs_;
  CgroupPath victim_;
  bool removed_ = false;
};

TEST_P(CgroupApplierTest, AnAdoptedCgroupRemovedMidApplyIsSkippedAndTheRestWritten) {
  Node s(GetParam());
  const std::string h = GetParam() == CgroupVersion::kV1 ? "cpuset" : "";
  DesiredTree made_by_kubelet;
  made_by_kubelet.managedRoots = {path("kubepods")};
  made_by_kubelet.cgroups[path("kubepods")] = spec("0-7");
  made_by_kubelet.cgroups[path("kubepods/a")] = spec("0-7");
  made_by_kubelet.cgroups[path("kubepods/b")] = spec("0-7");
  ASSERT_TRUE(CgroupApplier(s.fs, *s.backend).apply(made_by_kubelet).ok());
  DesiredTree tree;
  tree.adoptedRoots = {path("kubepods")};
  tree.cgroups[path("kubepods")] = spec("0-7");
  tree.cgroups[path("kubepods/a")] = spec("0-3");
  tree.cgroups[path("kubepods/b")] = spec("0-3");
  RemovedBeforeItsWrite fs(s.fs, path("kubepods/a"));
  auto ops = CgroupApplier(fs, *s.backend).apply(tree);
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  ASSERT_EQ(ops->size(), 1u);
  EXPECT_EQ(ops->front().describe(), "write \"0-3\" to " + h + ":kubepods/b/cpuset.cpus");
  // Managed, it is an error: VRI made it and expects it.
  tree.managedRoots = tree.adoptedRoots;
  tree.adoptedRoots.clear();
  tree.cgroups[path("kubepods/b")] = spec("0-1");
  RemovedBeforeItsWrite managed(s.fs, path("kubepods/b"));
  auto refused = CgroupApplier(managed, *s.backend).apply(tree);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("kubepods/b"));
}

// A pod adopted while its container, which VRI does not know yet, runs on CPUs the pod is to give
// up (created while VRI was away): on v1 the kernel refuses to narrow a cpuset below a child's, so
// the stranger is narrowed to what it keeps of the pod's new set first, deepest first. v2's
// effective set does that by itself: nothing is written below the pod there.
TEST_P(CgroupApplierTest, NarrowingAnAdoptedCgroupNarrowsChildrenItDoesNotKnowFirstOnV1) {
  Node s(GetParam());
  const bool v1 = GetParam() == CgroupVersion::kV1;
  const std::string h = v1 ? "cpuset" : "";
  DesiredTree made_by_the_runtime;
  made_by_the_runtime.managedRoots = {path("kubepods")};
  made_by_the_runtime.cgroups[path("kubepods")] = spec("0-7");
  made_by_the_runtime.cgroups[path("kubepods/pod")] = spec("0-7");
  made_by_the_runtime.cgroups[path("kubepods/pod/ctr")] = spec("0-7");
  made_by_the_runtime.cgroups[path("kubepods/pod/ctr/sub")] = spec("2-7");
  made_by_the_runtime.cgroups[path("kubepods/pod/low")] = spec("0-1");
  ASSERT_TRUE(CgroupApplier(s.fs, *s.backend).apply(made_by_the_runtime).ok());

  DesiredTree tree;
  tree.adoptedRoots = {path("kubepods")};
  tree.cgroups[path("kubepods")] = spec("0-7");
  tree.cgroups[path("kubepods/pod")] = spec("0-3");
  CgroupApplier applier(s.fs, *s.backend);
  auto ops = applier.apply(tree);
  ASSERT_TRUE(ops.ok()) << ops.error().message();
  std::vector<std::string> described;
  for (const CgroupOp& op : *ops) described.push_back(op.describe());
  if (v1) {
    EXPECT_THAT(described, ::testing::ElementsAre("write \"2-3\" to cpuset:kubepods/pod/ctr/sub/cpuset.cpus",
                                                  "write \"0-3\" to cpuset:kubepods/pod/ctr/cpuset.cpus",
                                                  "write \"0-3\" to cpuset:kubepods/pod/cpuset.cpus"));
  } else {
    EXPECT_THAT(described, ::testing::ElementsAre("write \"0-3\" to :kubepods/pod/cpuset.cpus"));
  }
  EXPECT_EQ(*s.fs.read({h, path("kubepods/pod/low")}, "cpuset.cpus"), "0-1");  // within already: untouched
  // And a second run has nothing left to do.
  auto again = applier.plan(tree);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

INSTANTIATE_TEST_SUITE_P(BothVersions, CgroupApplierTest, ::testing::Values(CgroupVersion::kV1, CgroupVersion::kV2),
                         [](const auto& info) { return std::string(cgroupVersionName(info.param)); });

TEST(CgroupApplierPartitionsTest, V1HasNoPartitionsAndSaysSo) {
  Node s(CgroupVersion::kV1);
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree tree;
  tree.managedRoots = {path("kubepods")};
  tree.cgroups[path("kubepods")] = spec("0-3");
  tree.cgroups[path("kubepods")].settings.cpusExclusive = cpus("3");
  auto refused = applier.apply(tree);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("cpuset partitions need cgroup v2"));
  EXPECT_EQ(s.fs.writes() + s.fs.mkdirs(), 0);
}

// Without emulated partitions the v2 fixture is a kernel before 6.7: the files are not there.
TEST(CgroupApplierPartitionsTest, AKernelWithoutThePartitionFilesRefusesTheWrite) {
  Node s(CgroupVersion::kV2);
  CgroupApplier applier(s.fs, *s.backend);
  DesiredTree tree;
  tree.managedRoots = {path("kubepods")};
  tree.cgroups[path("kubepods")] = spec("0-3");
  tree.cgroups[path("kubepods/c")] = spec("3");
  tree.cgroups[path("kubepods/c")].settings.cpusExclusive = cpus("3");
  tree.cgroups[path("kubepods/c")].settings.partitionRoot = true;
  auto refused = applier.apply(tree);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("cpuset.cpus.exclusive"));
}

}  // namespace
}  // namespace vri
