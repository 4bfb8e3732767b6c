// The systemd properties for each control file's value, and which unit a cgroup is.
#include "systemd/unit_properties.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/unit_ownership.h"

namespace vri {
namespace {

using Mask = std::vector<uint8_t>;

UnitProperty only(std::string_view file, std::string_view value) {
  auto properties = unitPropertiesFor(file, value);
  EXPECT_TRUE(properties.ok()) << properties.error().message();
  EXPECT_EQ(properties->size(), 1u);
  return properties->front();
}

TEST(UnitPropertiesTest, CpusetsBecomeSystemdsBitmasks) {
  EXPECT_EQ(only("cpuset.cpus", "0-3"), (UnitProperty{"AllowedCPUs", Mask{0x0f}}));
  EXPECT_EQ(only("cpuset.cpus", "1,8"), (UnitProperty{"AllowedCPUs", Mask{0x02, 0x01}}));
  EXPECT_EQ(only("cpuset.mems", "1"), (UnitProperty{"AllowedMemoryNodes", Mask{0x02}}));
  // Empty: systemd writes the file empty, and the cgroup uses its parent's CPUs.
  EXPECT_EQ(only("cpuset.cpus", ""), (UnitProperty{"AllowedCPUs", Mask{}}));
  const CpuSet wide = *CpuSet::parse("0,7-9,63,255");
  EXPECT_EQ(cpusOfUnitMask(unitCpuMask(wide)), wide);
  EXPECT_EQ(unitCpuMask(wide).size(), 32u);
}

TEST(UnitPropertiesTest, NumbersAndInfinity) {
  EXPECT_EQ(only("cpu.weight", "39"), (UnitProperty{"CPUWeight", uint64_t{39}}));
  EXPECT_EQ(only("memory.max", "67108864"), (UnitProperty{"MemoryMax", uint64_t{67108864}}));
  EXPECT_EQ(only("memory.max", "max"), (UnitProperty{"MemoryMax", kUnitInfinity}));
  EXPECT_EQ(only("memory.low", "4096"), (UnitProperty{"MemoryLow", uint64_t{4096}}));
  EXPECT_EQ(only("pids.max", "max").describe(), "TasksMax=infinity");
}

TEST(UnitPropertiesTest, CpuMaxIsAQuotaPerSecondAndAPeriod) {
  auto half = unitPropertiesFor("cpu.max", "50000 100000");
  ASSERT_TRUE(half.ok());
  EXPECT_THAT(*half, ::testing::ElementsAre(UnitProperty{"CPUQuotaPerSecUSec", uint64_t{500000}},
                                            UnitProperty{"CPUQuotaPeriodUSec", uint64_t{100000}}));
  auto none = unitPropertiesFor("cpu.max", "max 20000");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, ::testing::ElementsAre(UnitProperty{"CPUQuotaPerSecUSec", kUnitInfinity},
                                            UnitProperty{"CPUQuotaPeriodUSec", uint64_t{20000}}));
}

TEST(UnitPropertiesTest, FilesSystemdNeverWritesNeedNoProperty) {
  for (const auto& [file, value] : std::vector<std::pair<std::string, std::string>>{
           {"hugetlb.2MB.max", "2097152"}, {"cpuset.cpus.exclusive", "2-3"}, {"cpuset.cpus.partition", "root"}}) {
    auto none = unitPropertiesFor(file, value);
    ASSERT_TRUE(none.ok()) << file;
    EXPECT_TRUE(none->empty()) << file;
  }
}

TEST(UnitPropertiesTest, BadValuesAndUnknownFilesAreRefused) {
  EXPECT_FALSE(unitPropertiesFor("cpuset.cpus", "3-1").ok());
  EXPECT_FALSE(unitPropertiesFor("cpu.weight", "0").ok());
  EXPECT_FALSE(unitPropertiesFor("memory.max", "-1").ok());
  auto unknown = unitPropertiesFor("cpu.shares", "1024");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message(), ::testing::HasSubstr("cpu.shares"));
}

class UnitOwnershipTest : public ::testing::Test {
 protected:
  UnitKind kind(const std::string& path) {
    const auto namer = makeKubeletNamer(layout.driver, layout.kubeletParent);
    return unitKindOf(layout, *namer, *CgroupPath::parse(path));
  }
  TreeLayout layout = [] {
    TreeLayout l;
    l.driver = KubeletDriver::kSystemd;
    l.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
    l.machinePartition = *CgroupPath::parse("machine.slice");
    return l;
  }();
};

TEST_F(UnitOwnershipTest, KubeletsUnitsUnderTheSystemdDriver) {
  EXPECT_EQ(kind("kubepods.slice"), UnitKind::kKubepodsSlice);
  EXPECT_EQ(kind("kubepods.slice/kubepods-burstable.slice"), UnitKind::kQosSlice);
  EXPECT_EQ(kind("kubepods.slice/kubepods-besteffort.slice"), UnitKind::kQosSlice);
  EXPECT_EQ(kind("kubepods.slice/kubepods-pod1234_5678.slice"), UnitKind::kGuaranteedPod);
  EXPECT_EQ(kind("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice"), UnitKind::kQosPod);
  EXPECT_EQ(kind("kubepods.slice/kubepods-pod12_34.slice/cri-containerd-abc.scope"), UnitKind::kContainerScope);
  EXPECT_EQ(kind("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice/cri-containerd-abc.scope"),
            UnitKind::kContainerScope);
  EXPECT_EQ(kind("system.slice"), UnitKind::kNotAUnit);
}

TEST_F(UnitOwnershipTest, MachinedsUnitsAndLibvirtsDelegatedCgroups) {
  EXPECT_EQ(kind("machine.slice"), UnitKind::kMachineSlice);
  EXPECT_EQ(kind("machine.slice/machine-qemu\\x2d1\\x2dvm.scope"), UnitKind::kMachineScope);
  EXPECT_EQ(kind("machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt"), UnitKind::kDelegated);
  EXPECT_EQ(kind("machine.slice/machine-qemu\\x2d1\\x2dvm.scope/libvirt/vcpu0"), UnitKind::kDelegated);
}

TEST_F(UnitOwnershipTest, NoUnitsWithoutSystemdsNames) {
  layout.driver = KubeletDriver::kCgroupfs;
  EXPECT_EQ(kind("kubepods"), UnitKind::kNotAUnit);
  EXPECT_EQ(kind("kubepods/burstable/pod1234"), UnitKind::kNotAUnit);
  layout.libvirt = LibvirtLayout::kNoSystemd;
  layout.machinePartition = *CgroupPath::parse("machine");
  EXPECT_EQ(kind("machine/qemu-1-vm.libvirt-qemu"), UnitKind::kNotAUnit);
  // A machine partition that is no slice is no unit either, whatever the layout says.
  layout.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
  EXPECT_EQ(kind("machine/machine-qemu\\x2d1\\x2dvm.scope"), UnitKind::kNotAUnit);
}

TEST_F(UnitOwnershipTest, WhoKeepsWhat) {
  for (UnitKind k : {UnitKind::kKubepodsSlice, UnitKind::kQosSlice, UnitKind::kGuaranteedPod, UnitKind::kQosPod,
                     UnitKind::kMachineSlice, UnitKind::kMachineScope})
    EXPECT_TRUE(systemdKeepsValues(k)) << unitKindName(k);
  for (UnitKind k : {UnitKind::kNotAUnit, UnitKind::kContainerScope, UnitKind::kDelegated})
    EXPECT_FALSE(systemdKeepsValues(k)) << unitKindName(k);
  EXPECT_TRUE(inheritsCpuset(UnitKind::kQosPod));
  EXPECT_TRUE(inheritsCpuset(UnitKind::kMachineScope));
  EXPECT_FALSE(inheritsCpuset(UnitKind::kGuaranteedPod));
  EXPECT_FALSE(inheritsCpuset(UnitKind::kQosSlice));
}

}  // namespace
}  // namespace vri
