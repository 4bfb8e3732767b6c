// The partition mode through the decision pipeline, on the v2 fixture with Linux 6.12's partition
// rules (fixture_cpuset_rules.cc): an exclusive grant and its release write the same files however many
// pods share the pool, the kernel's state reads `root`, and an invalidated partition is drift that
// reconcile repairs. The real kernel's side is the partitions suite (tests/v2guest/suites/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"
#include "tests/vri/decision_pipeline_harness.h"

namespace vri::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string file(Pipeline& p, const std::string& path, const char* name) {
  auto text = p.fixture().read({"", *CgroupPath::parse(path)}, name);
  EXPECT_TRUE(text.ok()) << path << "/" << name;
  return text.ok() ? *text : std::string();
}

// `sharedPods` BestEffort pods with a container each, on the shared pool.
void fillPool(Pipeline& p, int sharedPods) {
  for (int n = 0; n < sharedPods; ++n) {
    ASSERT_TRUE(
        p.node->admitContainer(pod(uid(100 + n), QosClass::kBestEffort), shared("s" + std::to_string(n), 0)).ok());
  }
}

struct Costs {
  int grant = 0, release = 0;
};

// The writes of one exclusive container's grant and of its pod's release.
Costs grantAndRelease(Pipeline& p) {
  Costs costs;
  int before = p.fixture().writes();
  EXPECT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  costs.grant = p.fixture().writes() - before;
  before = p.fixture().writes();
  EXPECT_TRUE(p.node->releasePod(uid(1)).ok());
  costs.release = p.fixture().writes() - before;
  return costs;
}

TEST(CpusetPartitionsTest, AGrantWritesTheSameFilesHoweverManyPodsShareThePool) {
  Pipeline empty(Ownership::kEverything, CgroupVersion::kV2, true);
  const Costs alone = grantAndRelease(empty);
  Pipeline full(Ownership::kEverything, CgroupVersion::kV2, true);
  fillPool(full, 40);
  const Costs beside40 = grantAndRelease(full);
  EXPECT_EQ(beside40.grant, alone.grant);
  EXPECT_EQ(beside40.release, alone.release);
  // Without partitions each shared container's cpuset follows the pool: the cost grows with them.
  Pipeline rewrite(Ownership::kEverything, CgroupVersion::kV2, false);
  fillPool(rewrite, 40);
  const Costs rewritten = grantAndRelease(rewrite);
  EXPECT_GT(rewritten.grant, alone.grant + 40);
  EXPECT_GT(rewritten.release, alone.release + 40);
}

TEST(CpusetPartitionsTest, TheContainerIsARootPartitionAndTheSharedCgroupsKeepTheWideSet) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  fillPool(p, 2);
  const std::string besteffort = "kubepods/besteffort/pod" + uid(100) + "/s0";
  const std::string wide = file(p, besteffort, "cpuset.cpus");
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const std::string container = "kubepods/pod" + uid(1) + "/g1";
  const std::string cpus = file(p, container, "cpuset.cpus");
  EXPECT_EQ(file(p, container, "cpuset.cpus.partition"), "root");
  EXPECT_EQ(file(p, container, "cpuset.cpus.exclusive"), cpus);
  EXPECT_EQ(file(p, "kubepods/pod" + uid(1), "cpuset.cpus.exclusive"), cpus);
  EXPECT_EQ(file(p, "kubepods", "cpuset.cpus.exclusive"), cpus);
  EXPECT_EQ(file(p, besteffort, "cpuset.cpus"), wide) << "a shared cgroup keeps its cpuset";
  EXPECT_TRUE(CpuSet::parse(cpus)->isSubsetOf(*CpuSet::parse(wide)));
  EXPECT_THAT(p.pendingOps(), ::testing::IsEmpty());
  // Released: member again, and no exclusive CPUs left anywhere.
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  EXPECT_EQ(file(p, "kubepods", "cpuset.cpus.exclusive"), "");
  EXPECT_EQ(file(p, besteffort, "cpuset.cpus"), wide);
  EXPECT_THAT(p.pendingOps(), ::testing::IsEmpty());
}

// What libvirt is told for a shared VM's threads.
CpuSet wideSet(Pipeline& p) {
  const StatePtr now = p.ledger->state();
  return p.node->wideSharedCpus(*now);
}

constexpr char kVmScope[] = "machine/qemu-1-web.libvirt-qemu";

std::string vmUuid(int n) {
  char text[40];
  std::snprintf(text, sizeof text, "8f0c%04d-0000-4000-8000-000000000001", n);
  return text;
}

// The n-th running VM (from 1; its scope kVmScope, then kVmScope-2, ...) with `vcpus` vCPUs.
void runVm(Pipeline& p, int n, int vcpus, VmCpuPolicy policy) {
  auto admitted = p.node->admitVm(vm(vmUuid(n), vcpus, policy));
  ASSERT_TRUE(admitted.ok()) << admitted.error().message();
  p.fakeQemu(kVmScope + (n == 1 ? std::string() : "-" + std::to_string(n)), 4200 + n, vcpus);
  ASSERT_TRUE(p.node->vmStarted(vmUuid(n), 4200 + n).ok());
}

TEST(CpusetPartitionsTest, SharedVmsKeepTheWideSetThroughAPodsGrant) {
  // A grant and its release cost the same beside one shared VM as beside three (the machine partition's
  // cpu.shares, a node-level value, moves with pods' requests once VMs run: one write, however many).
  Pipeline one(Ownership::kEverything, CgroupVersion::kV2, true);
  runVm(one, 1, 1, VmCpuPolicy::kShared);
  const Costs beside_one = grantAndRelease(one);
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  for (int n = 1; n <= 3; ++n) runVm(p, n, 1, VmCpuPolicy::kShared);
  const Costs beside_three = grantAndRelease(p);
  EXPECT_EQ(beside_three.grant, beside_one.grant);
  EXPECT_EQ(beside_three.release, beside_one.release);
  const std::string vcpu = std::string(kVmScope) + "/vcpu0";
  const std::string wide = file(p, vcpu, "cpuset.cpus");
  EXPECT_EQ(wide, wideSet(p).format()) << "what libvirt is told";
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const CpuSet own = *CpuSet::parse(file(p, "kubepods/pod" + uid(1) + "/g1", "cpuset.cpus"));
  EXPECT_TRUE(own.isSubsetOf(*CpuSet::parse(wide)));
  // The grant took the CPUs from the shared pool; the VM's threads keep their cpuset and libvirt's pins
  // (the kernel's effective set leaves the partition out).
  const StatePtr granted = p.ledger->state();
  EXPECT_FALSE(granted->shared().intersects(own));
  for (const std::string& group : {vcpu, std::string(kVmScope) + "/emulator", std::string(kVmScope)})
    EXPECT_EQ(file(p, group, "cpuset.cpus"), wide) << group;
  EXPECT_EQ(wideSet(p).format(), wide);
  EXPECT_THAT(p.pendingOps(), ::testing::IsEmpty());
}

TEST(CpusetPartitionsTest, ADedicatedVmTakesItsCpusByRewritingTheWideSet) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  fillPool(p, 1);
  runVm(p, 1, 2, VmCpuPolicy::kShared);
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const CpuSet partition = *CpuSet::parse(file(p, "kubepods/pod" + uid(1) + "/g1", "cpuset.cpus"));
  // A vCPU group is threaded and cannot be a partition: the dedicated VM's CPUs leave the wide set,
  // and every shared cgroup, pods' and VMs', is rewritten.
  runVm(p, 2, 1, VmCpuPolicy::kDedicated);
  const CpuSet dedicated = *CpuSet::parse(file(p, std::string(kVmScope) + "-2/vcpu0", "cpuset.cpus"));
  const CpuSet wide = wideSet(p);
  EXPECT_FALSE(wide.intersects(dedicated));
  EXPECT_TRUE(partition.isSubsetOf(wide)) << "pods' partitions stay in the wide set";
  EXPECT_EQ(file(p, std::string(kVmScope) + "/vcpu0", "cpuset.cpus"), wide.format());
  EXPECT_EQ(file(p, "kubepods/besteffort/pod" + uid(100) + "/s0", "cpuset.cpus"), wide.format());
  EXPECT_EQ(file(p, "kubepods/pod" + uid(1) + "/g1", "cpuset.cpus.partition"), "root");
  EXPECT_THAT(p.pendingOps(), ::testing::IsEmpty());
}

TEST(CpusetPartitionsTest, APodsSharedContainersLeaveOutItsPartitions) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  // The shared container first, on the whole wide set: it must leave g1's CPUs before g1 becomes a
  // partition, or the kernel leaves g1 `root invalid`.
  ContainerSpec side = exclusive("g2", 1);
  side.name = "side";
  side.cpuRequestMilli = side.cpuLimitMilli = 500;  // Guaranteed, but no whole CPU: the shared pool
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), side).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const CpuSet own = *CpuSet::parse(file(p, "kubepods/pod" + uid(1) + "/g1", "cpuset.cpus"));
  const CpuSet sibling = *CpuSet::parse(file(p, "kubepods/pod" + uid(1) + "/g2", "cpuset.cpus"));
  EXPECT_FALSE(sibling.intersects(own)) << sibling.format() << " beside " << own.format();
  EXPECT_FALSE(sibling.empty());
  EXPECT_EQ(file(p, "kubepods/pod" + uid(1) + "/g1", "cpuset.cpus.partition"), "root");
}

TEST(CpusetPartitionsTest, AnInvalidatedPartitionIsDriftThatReconcileRepairs) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  ContainerSpec side = exclusive("g2", 1);
  side.name = "side";
  side.cpuRequestMilli = side.cpuLimitMilli = 500;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), side).ok());
  const std::string container = "kubepods/pod" + uid(1) + "/g1";
  const std::string sibling = "kubepods/pod" + uid(1) + "/g2";
  // A runtime writes the sibling's cpuset over the partition's CPUs, as runc does with a wide request.
  ASSERT_TRUE(p.fixture().write({"", *CgroupPath::parse(sibling)}, "cpuset.cpus", "0-7").ok());
  ASSERT_THAT(file(p, container, "cpuset.cpus.partition"), HasSubstr("root invalid"));
  auto report = p.node->reconcile(false);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_THAT(report->drift, Contains(HasSubstr("cpuset.cpus.partition is \"root invalid (Cpu list in cpuset.cpus "
                                                "not exclusive)\", VRI wants \"root\"")));
  // The sibling narrowed first, then the partition written member and root: the kernel's only repair.
  std::vector<std::string> partition_writes;
  for (const std::string& op : report->operations) {
    if (op.find("cpuset.cpus.partition") != std::string::npos) partition_writes.push_back(op);
  }
  EXPECT_THAT(partition_writes, ElementsAre(HasSubstr("\"member\""), HasSubstr("\"root\"")));
  EXPECT_EQ(file(p, container, "cpuset.cpus.partition"), "root");
  EXPECT_THAT(p.pendingOps(), ::testing::IsEmpty());
}

TEST(CpusetPartitionsTest, ACpuAStrangerHoldsExclusivelyIsAClearRefusalThatChangesNothing) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  fillPool(p, 1);
  // A cgroup VRI does not know beside the pods, holding every CPU for a partition of its own.
  const CgroupDir stranger{"", *CgroupPath::parse("kubepods/stranger")};
  ASSERT_TRUE(p.fixture().mkdir(stranger).ok());
  ASSERT_TRUE(p.fixture().write(stranger, "cpuset.cpus.exclusive", "0-7").ok());
  const StatePtr before = p.ledger->state();
  const int writes = p.fixture().writes();
  auto refused = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("cpuset.cpus.exclusive"));
  EXPECT_THAT(refused.error().message(), HasSubstr("Invalid argument"));
  EXPECT_THAT(refused.error().message(), HasSubstr("a sibling holds exclusively"));
  EXPECT_EQ(p.ledger->state(), before) << "the ledger is as it was";
  EXPECT_EQ(file(p, "kubepods", "cpuset.cpus.exclusive"), "") << "undone";
  EXPECT_GT(p.fixture().writes(), writes);
  // Nothing left to repair but the stranger, which a vrid that owns everything would remove.
  for (const CgroupOp& op : p.pendingOps()) EXPECT_THAT(op.describe(), HasSubstr("rmdir :kubepods/stranger"));
}

// What runc makes under the cgroupfs driver on v2: the cgroup, its parent delegating cpuset and cpu.
void runcMakes(Pipeline& p, const std::string& path) {
  const CgroupPath cgroup = *CgroupPath::parse(path);
  ASSERT_TRUE(p.fixture().write({"", cgroup.parent()}, "cgroup.subtree_control", "+cpu +cpuset").ok()) << path;
  ASSERT_TRUE(p.fixture().mkdir({"", cgroup}).ok()) << path;
}

TEST(CpusetPartitionsTest, AContainerWhoseCgroupComesWithItsStartBecomesAPartitionThen) {
  // kubelet's and the runtime's cgroups (ownership cpusets): kubepods, the QoS cgroups and the pod's
  // are there before the container's admission; the runtime makes the container's when it starts it.
  Pipeline p(Ownership::kCpusetsAndMachine, CgroupVersion::kV2, true);
  for (const std::string& path : {std::string("kubepods"), std::string("kubepods/burstable"),
                                  std::string("kubepods/besteffort"), "kubepods/pod" + uid(1)})
    runcMakes(p, path);
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const std::string container = "kubepods/pod" + uid(1) + "/g1";
  ASSERT_FALSE(p.fixture().exists({"", *CgroupPath::parse(container)})) << "the admission makes no container cgroup";
  const std::string cpus = file(p, "kubepods/pod" + uid(1), "cpuset.cpus.exclusive");
  EXPECT_EQ(CpuSet::parse(cpus)->count(), 2) << "the pod's exclusive CPUs are set at the admission";

  runcMakes(p, container);  // the start
  EXPECT_EQ(file(p, container, "cpuset.cpus.partition"), "member");
  WriteStats written;
  ASSERT_TRUE(p.node->containerStarted(uid(1), "g1", &written).ok());
  EXPECT_EQ(file(p, container, "cpuset.cpus.partition"), "root");
  EXPECT_EQ(file(p, container, "cpuset.cpus.exclusive"), cpus);
  EXPECT_EQ(file(p, container, "cpuset.cpus"), cpus);
  EXPECT_GE(written.writes, 3) << "exclusive CPUs, cpuset, partition";
  for (const CgroupOp& op : p.pendingOps())  // the QoS cgroups, made after vrid started, wait for reconcile
    EXPECT_THAT(op.describe(), ::testing::Not(HasSubstr(uid(1)))) << "left to write for the pod";

  // Told again (the runtime restarted it): nothing left to write.
  ASSERT_TRUE(p.node->containerStarted(uid(1), "g1", &written).ok());
  EXPECT_EQ(written.writes, 0);
  // A pod the ledger does not hold: NOT_FOUND, and nothing written.
  const int before = p.fixture().writes();
  const Result<void> unknown = p.node->containerStarted(uid(9), "x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(p.fixture().writes(), before);
}

// Handed back to kubelet's static policy, which knows no partitions: the exclusive container keeps
// its CPUs (and stays a root partition), each shared container gets the pool itself, kubelet's
// default set, in place of the wide set the kernel narrowed, so that kubelet's first reconcile
// writes what it holds; what they run on does not change.
TEST(CpusetPartitionsTest, HandedBackTheSharedContainersHoldKubeletsDefaultSet) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2, true);
  fillPool(p, 1);
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("g1", 2)).ok());
  const std::string besteffort = "kubepods/besteffort/pod" + uid(100) + "/s0";
  const std::string container = "kubepods/pod" + uid(1) + "/g1";
  const std::string cpus = file(p, container, "cpuset.cpus");
  const StatePtr now = p.ledger->state();
  const std::string pool = now->shared().format();
  ASSERT_NE(file(p, besteffort, "cpuset.cpus"), pool) << "the wide set";
  TempDir kubelet;
  auto composed = p.node->handBack({.kubeletRootDir = kubelet.path()});
  ASSERT_TRUE(composed.ok()) << composed.error().message();
  EXPECT_EQ(composed->checkpoint.defaultCpuSet, pool);
  std::ofstream(kubelet.sub("cpu_manager_state")) << composed->checkpointText;
  auto handed =
      p.node->handBack({.kubeletRootDir = kubelet.path(), .dryRun = false, .writtenCpu = composed->checkpointText});
  ASSERT_TRUE(handed.ok()) << handed.error().message();
  EXPECT_EQ(file(p, besteffort, "cpuset.cpus"), pool);
  EXPECT_EQ(file(p, container, "cpuset.cpus"), cpus);
  EXPECT_EQ(file(p, container, "cpuset.cpus.partition"), "root");
  EXPECT_EQ(file(p, "kubepods/besteffort", "cpuset.cpus"), file(p, "kubepods", "cpuset.cpus"));
}

}  // namespace
}  // namespace vri::testing
