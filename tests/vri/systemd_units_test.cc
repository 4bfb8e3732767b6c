// Under systemd, vrid sets the values of the units systemd owns through systemd as well as
// in their files (SystemdCgroupFs). Here systemd is a recording SystemdUnits over the v2
// fixture: which units get which properties, that a pool change costs the same number of
// calls on a full node as on an empty one, and that a refused call is a failed write.
// The real systemd is met in the guest's `systemd` suite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/unit_ownership.h"
#include "tests/vri/systemd_node.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(SystemdUnitsTest, APoolChangeSetsTheSlicesNotEveryTenant) {
  for (int tenants : {4, 40}) {
    SystemdNode node;
    for (int n = 0; n < tenants; ++n) node.runBestEffortPod(n);
    node.units.calls.clear();
    auto placed = node.admitExclusive(0, 2);
    ASSERT_TRUE(placed.ok()) << placed.error().message();
    ASSERT_EQ(placed->exclusive.count(), 2);
    const StatePtr now = node.ledger->state();
    const std::string shared = now->shared().format();
    ASSERT_EQ(shared, (CpuSet::range(0, 7) - placed->exclusive).format());
    // The QoS slices and machine.slice get the shared pool; kubepods keeps every CPU (its pods hold
    // them all), so it needs no call; nothing below the QoS slices gets one.
    EXPECT_THAT(node.units.calls, ::testing::UnorderedElementsAre("kubepods-burstable.slice AllowedCPUs=" + shared,
                                                                  "kubepods-besteffort.slice AllowedCPUs=" + shared,
                                                                  "machine.slice AllowedCPUs=" + shared))
        << tenants << " tenants";
    EXPECT_EQ(node.file("kubepods.slice/kubepods-besteffort.slice"), shared);
    // The BestEffort containers' own cpusets are still narrowed in their files, at once.
    EXPECT_EQ(
        node.file(node.podSlice(tenants - 1).str() + "/cri-containerd-c" + std::to_string(tenants - 1) + ".scope"),
        shared);
  }
}

TEST(SystemdUnitsTest, InheritingUnitsGetNoCpusetOfTheirOwn) {
  SystemdNode node;
  node.runBestEffortPod(1);
  const std::string slice = node.podSlice(1).str();
  EXPECT_THAT(slice, HasSubstr("kubepods-besteffort-pod5c000001_0000_4000"));
  // The pod slice stays empty (its QoS slice's CPUs); its container has the shared pool.
  EXPECT_EQ(node.file(slice), "");
  EXPECT_EQ(node.file(slice + "/cri-containerd-c1.scope"), "0-7");
  for (const std::string& call : node.units.calls) EXPECT_THAT(call, ::testing::Not(HasSubstr("pod5c")));
}

TEST(SystemdUnitsTest, TheFirstReconcileGivesSystemdEveryKeptUnitsValuesOnce) {
  const std::vector<std::string> node_level = {"kubepods.slice AllowedCPUs=0-7",
                                               "kubepods.slice AllowedMemoryNodes=0-1",
                                               "kubepods-burstable.slice AllowedCPUs=0-7",
                                               "kubepods-burstable.slice AllowedMemoryNodes=0-1",
                                               "kubepods-besteffort.slice AllowedCPUs=0-7",
                                               "kubepods-besteffort.slice AllowedMemoryNodes=0-1",
                                               "machine.slice AllowedCPUs=0-7",
                                               "machine.slice AllowedMemoryNodes=0-1",
                                               "machine.slice CPUWeight=1"};
  {
    // A first start: the files differ, so the reconcile writes them, each through systemd once.
    SystemdNode node;
    EXPECT_THAT(node.units.calls, ::testing::UnorderedElementsAreArray(node_level));
    node.units.calls.clear();
    ASSERT_TRUE(node.node->reconcile(false).ok());
    EXPECT_THAT(node.units.calls, ::testing::IsEmpty());
    // A restart finds the files right, and still gives systemd every value: it may never have had them.
    node.restart();
    EXPECT_THAT(node.units.calls, ::testing::UnorderedElementsAreArray(node_level));
  }
}

// vrid started while systemd does not answer (a daemon-reload storm): the ledger is read and
// checked, vrid serves with its writes pending, and they land once systemd answers again.
TEST(SystemdUnitsTest, AStartWhileSystemdDoesNotAnswerServesAndWritesOnceItDoes) {
  SystemdNode node;
  node.runBestEffortPod(1);
  node.units.refuse = true;
  node.units.calls.clear();
  node.restart();  // expects the start to succeed
  EXPECT_TRUE(node.node->writesPending());
  EXPECT_FALSE(node.admitExclusive(0, 2).ok());  // a decision needs systemd too, and is refused
  node.units.refuse = false;
  ASSERT_TRUE(node.node->reconcile(false).ok());
  EXPECT_FALSE(node.node->writesPending());
  EXPECT_THAT(node.units.calls, ::testing::Contains("kubepods-besteffort.slice AllowedCPUs=0-7"));
  EXPECT_TRUE(node.admitExclusive(0, 2).ok());
}

TEST(SystemdUnitsTest, ARefusedCallIsAFailedWriteAndChangesNothing) {
  SystemdNode node;
  node.runBestEffortPod(1);
  const std::string qos = "kubepods.slice/kubepods-besteffort.slice";
  const std::string before = node.file(qos);
  const StatePtr was = node.ledger->state();
  node.units.refuse = true;
  auto placed = node.admitExclusive(0, 2);
  ASSERT_FALSE(placed.ok());
  EXPECT_THAT(placed.error().message(), HasSubstr("did not answer"));
  EXPECT_EQ(node.file(qos), before);
  const StatePtr now = node.ledger->state();
  EXPECT_EQ(now->shared(), was->shared());
  EXPECT_EQ(now->pods.size(), was->pods.size());
}

TEST(SystemdCgroupFsTest, OnlyUnitsSystemdKeepsGetProperties) {
  testing::TempDir tmp;
  auto fixture =
      std::move(FixtureCgroupFs::createV2(tmp.sub("fx"), *CpuSet::parse("0-3"), *CpuSet::parse("0"))).value();
  TreeLayout layout;
  layout.driver = KubeletDriver::kSystemd;
  layout.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
  layout.machinePartition = *CgroupPath::parse("machine.slice");
  RecordingUnits units;
  SystemdCgroupFs fs(fixture, units, layout);
  ASSERT_TRUE(fs.write({"", CgroupPath()}, "cgroup.subtree_control", "+cpuset +cpu").ok());
  const std::string scope = "machine.slice/machine-qemu\\x2d1\\x2dvm.scope";
  for (const std::string& path : {std::string("machine.slice"), scope, scope + "/libvirt"}) {
    ASSERT_TRUE(fs.mkdir({"", *CgroupPath::parse(path)}).ok());
    auto delegated = fs.write({"", *CgroupPath::parse(path)}, "cgroup.subtree_control", "+cpuset +cpu");
    ASSERT_TRUE(delegated.ok()) << delegated.error().message();
  }
  ASSERT_TRUE(fs.write({"", *CgroupPath::parse("machine.slice")}, "cpu.weight", "250").ok());
  ASSERT_TRUE(fs.write({"", *CgroupPath::parse(scope)}, "cpu.weight", "40").ok());
  ASSERT_TRUE(fs.write({"", *CgroupPath::parse(scope + "/libvirt")}, "cpuset.cpus", "1").ok());
  EXPECT_THAT(units.calls,
              ::testing::ElementsAre("machine.slice CPUWeight=250", "machine-qemu\\x2d1\\x2dvm.scope CPUWeight=40"));
  EXPECT_EQ(fs.unitCalls(), 2u);
  // A value no property expresses is refused before anything is written.
  EXPECT_FALSE(fs.write({"", *CgroupPath::parse("machine.slice")}, "cpu.weight", "0").ok());
  EXPECT_EQ(fixture.read({"", *CgroupPath::parse("machine.slice")}, "cpu.weight").value(), "250");
  // A refused call leaves the file as it was.
  units.refuse = true;
  EXPECT_FALSE(fs.write({"", *CgroupPath::parse("machine.slice")}, "cpu.weight", "300").ok());
  EXPECT_EQ(fixture.read({"", *CgroupPath::parse("machine.slice")}, "cpu.weight").value(), "250");
}

}  // namespace
}  // namespace vri
