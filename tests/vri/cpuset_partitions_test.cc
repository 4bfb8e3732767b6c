// The partition mode through the decision pipeline, on the v2 fixture with Linux 6.12's partition
// rules (fixture_cpuset_rules.cc): an exclusive grant and its release write the same files however many
// pods share the pool, the kernel's state reads `root`, and an invalidated partition is drift that
// reconcile repairs. The real kernel's side is the partitions suite (tests/v2guest/suites/).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace vri::testing
