// The partition probe on the fixture: each reason it gives for not using partitions, and that it
// leaves nothing behind. That a real 6.12 kernel passes it is the partitions suite's
// (partitions_vrid_test starts vrid with cpuset_partitions = on).
#include "cgroup-model/partition_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const CpuSet kShared = *CpuSet::parse("0-3");

PartitionProbe probe(FixtureCgroupFs& fs, const CgroupBackend& backend, const CpuSet& shared = kShared,
                     CgroupPath kubeletParent = {}) {
  const auto namer = makeKubeletNamer(KubeletDriver::kSystemd, std::move(kubeletParent));
  auto found = probeCpusetPartitions(fs, backend, *namer, shared);
  EXPECT_TRUE(found.ok()) << found.error().message();
  EXPECT_FALSE(fs.exists({backend.primaryHierarchy(), *CgroupPath::parse(std::string(kPartitionProbeCgroup))}))
      << "the probe's cgroup is left behind";
  return found.ok() ? *found : PartitionProbe{};
}

TEST(PartitionProbeTest, CgroupV1HasNone) {
  testing::TempDir tmp;
  auto fs = FixtureCgroupFs::createV1(tmp.sub("fx"), *CpuSet::parse("0-3"), CpuSet{0});
  ASSERT_TRUE(fs.ok());
  const auto backend = makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}});
  const PartitionProbe found = probe(*fs, *backend);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.reason, "cgroup v1 has no cpuset partitions");
}

// A v2 node whose root delegates cpuset, as systemd's does once a unit asks for it.
FixtureCgroupFs delegatingNode(const testing::TempDir& tmp, bool partitions) {
  auto fs = FixtureCgroupFs::createV2(tmp.sub("fx"), *CpuSet::parse("0-3"), CpuSet{0});
  EXPECT_TRUE(fs.ok());
  if (partitions) fs->emulateCpusetPartitions();
  EXPECT_TRUE(fs->write({"", CgroupPath()}, "cgroup.subtree_control", "+cpuset").ok());
  return std::move(fs).value();
}

// A freshly booted node where no unit asked for cpuset: the probe enables it at the root to try, and
// disables it again when partitions are not usable (here: a kernel before 6.7).
TEST(PartitionProbeTest, ARootThatDelegatesNoCpusetIsGivenItForTheProbeOnly) {
  testing::TempDir tmp;
  auto fs = FixtureCgroupFs::createV2(tmp.sub("fx"), *CpuSet::parse("0-3"), CpuSet{0});
  ASSERT_TRUE(fs.ok());
  const CgroupDir root{"", CgroupPath()};
  const std::string before = *fs->read(root, "cgroup.subtree_control");
  ASSERT_THAT(before, Not(HasSubstr("cpuset")));
  const int writes = fs->writes();
  const PartitionProbe found = probe(*fs, *makeV2Backend());
  EXPECT_FALSE(found.usable);
  EXPECT_THAT(found.reason, HasSubstr("Linux before 6.7"));
  EXPECT_GT(fs->writes(), writes) << "cpuset was enabled for the probe";
  EXPECT_EQ(*fs->read(root, "cgroup.subtree_control"), before) << "and disabled again";
}

TEST(PartitionProbeTest, AKernelWithoutExclusiveCpusIsBefore67) {
  testing::TempDir tmp;
  FixtureCgroupFs fs = delegatingNode(tmp, false);
  const PartitionProbe found = probe(fs, *makeV2Backend());
  EXPECT_FALSE(found.usable);
  EXPECT_THAT(found.reason, HasSubstr("no cpuset.cpus.exclusive (Linux before 6.7)"));
}

TEST(PartitionProbeTest, KubepodsBelowAnotherCgroupCannotHaveRemotePartitions) {
  testing::TempDir tmp;
  auto fs = FixtureCgroupFs::createV2(tmp.sub("fx"), *CpuSet::parse("0-3"), CpuSet{0});
  ASSERT_TRUE(fs.ok());
  fs->emulateCpusetPartitions();
  const PartitionProbe found = probe(*fs, *makeV2Backend(), kShared, *CgroupPath::parse("node.slice"));
  EXPECT_FALSE(found.usable);
  EXPECT_THAT(found.reason, HasSubstr("is not directly below the cgroup root"));
}

TEST(PartitionProbeTest, APoolOfOneCpuLendsNone) {
  testing::TempDir tmp;
  FixtureCgroupFs fs = delegatingNode(tmp, true);
  const PartitionProbe found = probe(fs, *makeV2Backend(), CpuSet{3});
  EXPECT_FALSE(found.usable);
  EXPECT_THAT(found.reason, HasSubstr("fewer than 2 CPUs"));
}

// The fixture forms the partition but keeps the root's effective CPUs as they are: the probe does not
// take a `root` it cannot see working for one.
TEST(PartitionProbeTest, APartitionThatTakesNothingFromTheRootIsNotTrusted) {
  testing::TempDir tmp;
  FixtureCgroupFs fs = delegatingNode(tmp, true);
  const PartitionProbe found = probe(fs, *makeV2Backend());
  EXPECT_FALSE(found.usable);
  EXPECT_THAT(found.reason, HasSubstr("does not hold CPU 3 alone"));
}

}  // namespace
}  // namespace vri
