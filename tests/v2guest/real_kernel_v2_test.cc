// The cgroup model on a real cgroup v2 kernel, inside the v2 guest (suite
// `kernel`): a subtree of the delegated scope this test runs in, controllers
// enabled through cgroup.subtree_control, real processes and threads moved in,
// what the kernel then enforces, and the kernel's refusals side by side with
// FixtureCgroupFs's for the same steps. Only cgroups this test creates are
// written, by absolute path. Run by tests/v2guest/suites/kernel.sh, never on a
// v1 host.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>
#include <functional>

#include "cgroup-model/cgroup_applier.h"
#include "cgroup-model/cgroup_values.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "cgroup-model/node_tree.h"
#include "tests/support/eventually.h"
#include "tests/support/self_children.h"
#include "tests/support/temp_dir.h"
#include "tests/v2guest/delegated_scope.h"

namespace vri {
namespace {

constexpr char kPodUid[] = "0d6f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b";

class RealKernelV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "needs root";
    fs_.emplace(std::move(KernelCgroupFs::create("/sys/fs/cgroup")).value());
    root_ = *testing::delegatedScope().child(std::string("t-") +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(fs_->mkdir(dir(root_)).ok());
    auto enabled = fs_->write(dir(root_), "cgroup.subtree_control", testing::kDelegatedControllers);
    ASSERT_TRUE(enabled.ok()) << enabled.error().message();
    const CpuSet online = *CpuSet::parse(*fs_->read(dir(root_), "cpuset.cpus.effective"));
    ASSERT_GE(online.count(), 2) << "needs 2 CPUs";
    shared_ = CpuSet{online.first()};
    exclusive_ = CpuSet{(online - shared_).first()};
    mems_ = *CpuSet::parse(*fs_->read(dir(root_), "cpuset.mems.effective"));
  }
  void TearDown() override {
    for (int pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (fs_) removeTree(dir(root_));
  }
  void removeTree(const CgroupDir& d) {
    if (!fs_->exists(d)) return;
    auto names = fs_->children(d);
    if (names.ok()) {
      for (const std::string& name : *names) removeTree({"", *d.path.child(name)});
    }
    // A killed task leaves its cgroup a moment after waitpid returns.
    EXPECT_TRUE(testing::eventually([&] { return fs_->rmdir(d).ok(); })) << "left behind: " << d.describe();
  }
  static CgroupDir dir(const CgroupPath& path) { return {"", path}; }
  CgroupPath at(const std::string& relative) const { return *CgroupPath::parse(root_.str() + "/" + relative); }
  std::string read(const std::string& relative, const char* file) {
    auto text = fs_->read(dir(at(relative)), file);
    return text.ok() ? *text : "<" + text.error().message() + ">";
  }
  int spawn(std::vector<std::string> args) {
    const pid_t pid = testing::spawnSelf("vri-v2-child", args);
    children_.push_back(pid);
    return pid;
  }

  std::optional<KernelCgroupFs> fs_;
  CgroupPath root_;
  CpuSet shared_, exclusive_, mems_;
  std::vector<int> children_;
};

TEST_F(RealKernelV2Test, TheKernelEnforcesWhatTheModelApplies) {
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  layout.kubeletParent = root_;
  layout.machinePartition = *root_.child("machine");
  const std::vector<PodCgroup> pods = {
      {kPodUid, QosClass::kBurstable, {{"web", 250, 500, 64ULL << 20, std::nullopt, std::nullopt}}, 0, 0, {}},
      {"g1", QosClass::kGuaranteed, {{"app", 1000, 1000, 32ULL << 20, exclusive_, std::nullopt}}, 0, 0, {}}};
  NodeResources node{shared_, mems_, 2000, 1ULL << 30, {}, {}, {}};
  auto desired = buildDesiredTree(layout, node, pods, {});
  ASSERT_TRUE(desired.ok()) << desired.error().message();
  auto backend = makeV2Backend();
  CgroupApplier applier(*fs_, *backend);
  auto applied = applier.apply(*desired);
  ASSERT_TRUE(applied.ok()) << applied.error().message();

  const std::string web = std::string("kubepods/burstable/pod") + kPodUid + "/web";
  const int busy = spawn({"--vri-busy"});
  ASSERT_TRUE(fs_->write(dir(at(web)), "cgroup.procs", std::to_string(busy)).ok());
  EXPECT_EQ(read(web, "cpuset.cpus.effective"), shared_.format());
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), shared_.format());
  EXPECT_EQ(read("kubepods/podg1/app", "cpuset.cpus.effective"), exclusive_.format());
  EXPECT_EQ(read(web, "cpu.weight"), std::to_string(sharesToWeight(CpuShares{256}).value));  // runc's mapping
  EXPECT_EQ(read(web, "cpu.max"), "50000 100000");
  EXPECT_EQ(read(web, "memory.max"), std::to_string(64ULL << 20));
  EXPECT_TRUE(testing::eventually([&] {
    const std::string stat = read(web, "cpu.stat");
    return stat.find("usage_usec 0") == std::string::npos;
  }));
  // cpu.max holds the spinner to half a CPU: the kernel throttles it.
  EXPECT_TRUE(testing::eventually([&] {
    const std::string stat = read(web, "cpu.stat");
    const size_t at = stat.find("nr_throttled ");
    return at != std::string::npos && std::stoull(stat.substr(at + 13)) > 0;
  })) << read(web, "cpu.stat");
  // memory.max: a process that touches 128 MiB in the 64 MiB container is killed by the OOM killer.
  const int hog = spawn({"--vri-memory-probe", "128"});
  ASSERT_TRUE(testing::waitsForUsr1(hog));
  ASSERT_TRUE(fs_->write(dir(at(web)), "cgroup.procs", std::to_string(hog)).ok());
  ::kill(hog, SIGUSR1);
  int status = 0;
  ASSERT_EQ(::waitpid(hog, &status, 0), hog);
  std::erase(children_, hog);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;
  EXPECT_THAT(read(web, "memory.events"), ::testing::HasSubstr("oom_kill 1"));
  EXPECT_TRUE(applier.plan(*desired)->empty());
}

TEST_F(RealKernelV2Test, ThreadedVcpuGroupsPinTheThreadsMovedIntoThem) {
  for (const char* group : {"vm", "vm/emulator", "vm/vcpu0"}) ASSERT_TRUE(fs_->mkdir(dir(at(group))).ok()) << group;
  for (const char* group : {"vm/emulator", "vm/vcpu0"}) {
    auto threaded = fs_->write(dir(at(group)), "cgroup.type", "threaded");
    ASSERT_TRUE(threaded.ok()) << threaded.error().message();
  }
  EXPECT_EQ(read("vm", "cgroup.type"), "domain threaded");
  ASSERT_TRUE(fs_->write(dir(at("vm")), "cgroup.subtree_control", "+cpuset +cpu").ok());
  ASSERT_TRUE(fs_->write(dir(at("vm/vcpu0")), "cpuset.cpus", exclusive_.format()).ok());
  ASSERT_TRUE(fs_->write(dir(at("vm/emulator")), "cpuset.cpus", shared_.format()).ok());
  const int qemu = spawn({"--vri-sleeper"});
  ASSERT_TRUE(fs_->write(dir(at("vm")), "cgroup.procs", std::to_string(qemu)).ok());
  ASSERT_TRUE(fs_->write(dir(at("vm/vcpu0")), "cgroup.threads", std::to_string(qemu)).ok());
  EXPECT_EQ(testing::statusField(qemu, "Cpus_allowed_list"), exclusive_.format());
  ASSERT_TRUE(fs_->write(dir(at("vm/emulator")), "cgroup.threads", std::to_string(qemu)).ok());
  EXPECT_EQ(testing::statusField(qemu, "Cpus_allowed_list"), shared_.format());
  // memory is a domain controller: a threaded subtree cannot take it.
  EXPECT_EQ(fs_->write(dir(at("vm")), "cgroup.subtree_control", "+memory").error().sysErrno(), EOPNOTSUPP);
}

// An empty value is a value (an empty cpuset.cpus: the parent's CPUs), not a write of no bytes, which the
// kernel would never see.
TEST_F(RealKernelV2Test, AnEmptyValueReachesTheKernel) {
  ASSERT_TRUE(fs_->mkdir(dir(at("emptied"))).ok());
  ASSERT_TRUE(fs_->write(dir(at("emptied")), "cpuset.cpus", shared_.format()).ok());
  ASSERT_EQ(read("emptied", "cpuset.cpus"), shared_.format());
  ASSERT_TRUE(fs_->write(dir(at("emptied")), "cpuset.cpus", "").ok());
  EXPECT_EQ(read("emptied", "cpuset.cpus"), "");
}

TEST_F(RealKernelV2Test, PidsAndHugetlbLimitsHold) {
  ASSERT_TRUE(fs_->mkdir(dir(at("limited"))).ok());
  ASSERT_TRUE(fs_->write(dir(at("limited")), "pids.max", "1").ok());
  ASSERT_TRUE(fs_->write(dir(at("limited")), "hugetlb.2MB.max", std::to_string(4 * (2ULL << 20))).ok());
  ASSERT_TRUE(fs_->write(dir(at("limited")), "memory.min", std::to_string(16ULL << 20)).ok());
  EXPECT_EQ(read("limited", "hugetlb.2MB.max"), std::to_string(4 * (2ULL << 20)));
  EXPECT_EQ(read("limited", "memory.min"), std::to_string(16ULL << 20));
  const int probe = spawn({"--vri-fork-probe"});
  ASSERT_TRUE(testing::waitsForUsr1(probe));
  ASSERT_TRUE(fs_->write(dir(at("limited")), "cgroup.procs", std::to_string(probe)).ok());
  ::kill(probe, SIGUSR1);
  int status = 0;
  ASSERT_EQ(::waitpid(probe, &status, 0), probe);
  children_.clear();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42) << "fork inside pids.max=1 was not refused";
  // 5 pages where 4 are allowed: the fault is refused (the probe reports what the kernel did).
  ASSERT_TRUE(fs_->write(dir(at("limited")), "pids.max", "max").ok());
  const int pages = spawn({"--vri-hugepage-probe", "5"});
  ASSERT_TRUE(testing::waitsForUsr1(pages));
  ASSERT_TRUE(fs_->write(dir(at("limited")), "cgroup.procs", std::to_string(pages)).ok());
  ::kill(pages, SIGUSR1);
  ASSERT_EQ(::waitpid(pages, &status, 0), pages);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status;
}

// One step of the rules scenario, as a path below the test root and an operation.
struct Step {
  const char* what;
  std::function<Result<void>(CgroupFs&, const std::function<CgroupDir(const char*)>&, const std::string& pid)> run;
};

// The steps, in order: one process moves through them. Each is run on the
// kernel and on the fixture, and their answers must match.
std::vector<Step> ruleSteps() {
  using D = const std::function<CgroupDir(const char*)>&;
  const auto write = [](const char* group, const char* file, const char* value) {
    return [=](CgroupFs& fs, D d, const std::string&) { return fs.write(d(group), file, value); };
  };
  const auto move = [](const char* group, const char* file) {
    return [=](CgroupFs& fs, D d, const std::string& pid) { return fs.write(d(group), file, pid); };
  };
  const auto mkdir = [](const char* group) {
    return [=](CgroupFs& fs, D d, const std::string&) { return fs.mkdir(d(group)); };
  };
  const auto rmdir = [](const char* group) {
    return [=](CgroupFs& fs, D d, const std::string&) { return fs.rmdir(d(group)); };
  };
  return {
      {"mkdir g", mkdir("g")},
      {"g cpuset.cpus 3-1", write("g", "cpuset.cpus", "3-1")},
      {"process into g", move("g", "cgroup.procs")},
      {"g delegates +memory with a process", write("g", "cgroup.subtree_control", "+memory")},
      {"mkdir g/c", mkdir("g/c")},
      {"process into g/c", move("g/c", "cgroup.procs")},
      {"g delegates +cpu +memory +pids", write("g", "cgroup.subtree_control", "+cpu +memory +pids")},
      {"process back into g, which delegates memory", move("g", "cgroup.procs")},
      {"g/c delegates +hugetlb, which g does not offer", write("g/c", "cgroup.subtree_control", "+hugetlb")},
      {"rmdir g with a child", rmdir("g")},
      {"g/c cpu.max bogus", write("g/c", "cpu.max", "bogus")},
      {"g/c cpu.weight 0", write("g/c", "cpu.weight", "0")},
      {"g/c cpu.weight 10001", write("g/c", "cpu.weight", "10001")},
      {"g/c cpu.weight 10000", write("g/c", "cpu.weight", "10000")},
      {"g/c pids.max -1", write("g/c", "pids.max", "-1")},
      {"mkdir g/c/t", mkdir("g/c/t")},
      {"g/c/t threaded (g/c holds the process)", write("g/c/t", "cgroup.type", "threaded")},
      {"process into threaded g/c/t", move("g/c/t", "cgroup.procs")},
      {"thread into g/c/t", move("g/c/t", "cgroup.threads")},
      {"rmdir g/c/t with a thread", rmdir("g/c/t")},
      {"g/c delegates +memory in a threaded subtree", write("g/c", "cgroup.subtree_control", "+memory")},
      {"g/c delegates +cpu in a threaded subtree", write("g/c", "cgroup.subtree_control", "+cpu")},
      {"thread back into g/c", move("g/c", "cgroup.threads")},
      {"rmdir g/c/t empty", rmdir("g/c/t")},
      {"mkdir h", mkdir("h")},
      {"process into h", move("h", "cgroup.procs")},
      {"h delegates +cpu with a process (a thread root)", write("h", "cgroup.subtree_control", "+cpu")},
      {"h delegates +memory with a process", write("h", "cgroup.subtree_control", "+memory")},
      {"mkdir h/d", mkdir("h/d")},
      {"process into domain h/d below a thread root", move("h/d", "cgroup.procs")},
  };
}

std::string outcome(const Result<void>& r) {
  if (r.ok()) return "ok";
  const int err = r.error().sysErrno();
  return err != 0 ? std::string(strerrorname_np(err)) : "error: " + r.error().message();
}

TEST_F(RealKernelV2Test, TheFixtureRefusesWhatTheKernelRefuses) {
  testing::TempDir tmp;
  const CpuSet cpus = shared_ | exclusive_;
  auto fixture = FixtureCgroupFs::createV2(tmp.sub("fx"), cpus, mems_);
  ASSERT_TRUE(fixture.ok()) << fixture.error().message();
  // The fixture's root stands in for this test's root: delegate the same controllers.
  ASSERT_TRUE(fixture->mkdir({"", *CgroupPath::parse("r")}).ok());
  ASSERT_TRUE(fixture->write({"", {}}, "cgroup.subtree_control", "+cpuset +cpu +memory +pids").ok());
  ASSERT_TRUE(
      fixture->write({"", *CgroupPath::parse("r")}, "cgroup.subtree_control", "+cpuset +cpu +memory +pids").ok());
  const int sleeper = spawn({"--vri-sleeper"});
  const std::string pid = std::to_string(sleeper);
  ASSERT_TRUE(fixture->setProcFile(pid + "/cgroup", "0::/\n").ok());
  const auto kernel_dir = [&](const char* rel) { return dir(at(rel)); };
  const auto fixture_dir = [&](const char* rel) { return CgroupDir{"", *CgroupPath::parse(std::string("r/") + rel)}; };
  std::string table;
  int disagreements = 0;
  for (const Step& step : ruleSteps()) {
    const std::string kernel = outcome(step.run(*fs_, kernel_dir, pid));
    const std::string fixed = outcome(step.run(*fixture, fixture_dir, pid));
    table += std::string(kernel == fixed ? "  same " : "  DIFF ") + step.what + ": kernel " + kernel + ", fixture " +
             fixed + "\n";
    disagreements += kernel == fixed ? 0 : 1;
  }
  std::printf("%s", table.c_str());
  EXPECT_EQ(disagreements, 0) << table;
}

}  // namespace
}  // namespace vri
