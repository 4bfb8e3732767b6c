#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/libvirt_namer.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr char kUid[] = "0a1b2c3d-aaaa-bbbb-cccc-123456789abc";
constexpr char kCtr[] = "4f0e8d2b9c";

TEST(KubeletNamerTest, CgroupfsDriver) {
  auto namer = makeKubeletNamer(KubeletDriver::kCgroupfs);
  EXPECT_EQ(namer->kubepods().str(), "kubepods");
  EXPECT_EQ(namer->qos(QosClass::kGuaranteed).str(), "kubepods");
  EXPECT_EQ(namer->container(QosClass::kGuaranteed, kUid, kCtr)->str(),
            std::string("kubepods/pod") + kUid + "/" + kCtr);
  EXPECT_EQ(namer->pod(QosClass::kBurstable, kUid)->str(), std::string("kubepods/burstable/pod") + kUid);
  EXPECT_EQ(namer->qos(QosClass::kBestEffort).str(), "kubepods/besteffort");
}

TEST(KubeletNamerTest, SystemdDriver) {
  auto namer = makeKubeletNamer(KubeletDriver::kSystemd);
  EXPECT_EQ(namer->kubepods().str(), "kubepods.slice");
  EXPECT_EQ(namer->container(QosClass::kBurstable, kUid, kCtr)->str(),
            "kubepods.slice/kubepods-burstable.slice/"
            "kubepods-burstable-pod0a1b2c3d_aaaa_bbbb_cccc_123456789abc.slice/cri-containerd-4f0e8d2b9c.scope");
  EXPECT_EQ(namer->pod(QosClass::kGuaranteed, kUid)->str(),
            "kubepods.slice/kubepods-pod0a1b2c3d_aaaa_bbbb_cccc_123456789abc.slice");
  EXPECT_EQ(namer->qos(QosClass::kBestEffort).str(), "kubepods.slice/kubepods-besteffort.slice");
}

TEST(KubeletNamerTest, EveryNameItBuildsReadsBackAsWhatBuiltIt) {
  for (KubeletDriver driver : {KubeletDriver::kCgroupfs, KubeletDriver::kSystemd}) {
    auto namer = makeKubeletNamer(driver, *CgroupPath::parse("custom/root"));
    for (QosClass qos : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
      const CgroupPath pod = *namer->pod(qos, kUid);
      const CgroupPath container = *namer->container(qos, kUid, kCtr);
      EXPECT_EQ(namer->podUidOf(qos, pod.leaf()), kUid) << pod.str();
      EXPECT_EQ(namer->containerIdOf(container.leaf()), kCtr) << container.str();
      for (const std::string& parent : {"/" + pod.str(), pod.str() + "/"}) {
        auto read = namer->podOfCgroupParent(parent);
        ASSERT_TRUE(read.ok()) << parent << ": " << read.error().message();
        EXPECT_EQ(read->qos, qos) << parent;
        EXPECT_EQ(read->uid, kUid) << parent;
      }
      if (qos != QosClass::kGuaranteed) {
        EXPECT_TRUE(namer->isQosParent(namer->qos(qos).leaf()));
      }
    }
  }
}

TEST(KubeletNamerTest, ACgroupParentElsewhereThanThisNodePutsPodsIsRefused) {
  auto cgroupfs = makeKubeletNamer(KubeletDriver::kCgroupfs);
  auto systemd = makeKubeletNamer(KubeletDriver::kSystemd);
  // kubelet's own forms, read by the driver that makes them.
  EXPECT_EQ(systemd->podOfCgroupParent("kubepods-burstable-pod12_34.slice")->uid, "12-34");
  EXPECT_EQ(systemd->podOfCgroupParent("kubepods-pod12_34.slice")->qos, QosClass::kGuaranteed);
  EXPECT_EQ(cgroupfs->podOfCgroupParent("/kubepods/besteffort/pod1234")->qos, QosClass::kBestEffort);
  for (const char* bad :
       {"", "/", "/kubepods/burstable", "/x/pod1234", "/other/kubepods/pod1234", "/kubepods/burstable/pod../../etc",
        "/system.slice/foo", "other.slice", "kubepods-burstable-pod12_34.slice", "/kubepods/guaranteed/pod1234"}) {
    auto read = cgroupfs->podOfCgroupParent(bad);
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_EQ(read.error().code(), ErrorCode::kInvalidArgument);
  }
  for (const char* bad : {"pod1234", "/kubepods/pod1234", "kubepods-burstable-pod1234", "machine.slice"}) {
    EXPECT_FALSE(systemd->podOfCgroupParent(bad).ok()) << bad;
  }
}

TEST(KubeletNamerTest, RefusesHostileIdentities) {
  for (auto driver : {KubeletDriver::kCgroupfs, KubeletDriver::kSystemd}) {
    auto namer = makeKubeletNamer(driver);
    for (const char* uid : {"../../etc", "a/b", "", "pod\n1", "x y"}) {
      auto pod = namer->pod(QosClass::kBurstable, uid);
      ASSERT_FALSE(pod.ok()) << uid;
      EXPECT_THAT(pod.error().message(), HasSubstr("invalid pod UID"));
    }
    EXPECT_THAT(namer->container(QosClass::kBurstable, kUid, "..").error().message(),
                HasSubstr("invalid container id"));
    EXPECT_FALSE(namer->container(QosClass::kBurstable, kUid, std::string(300, 'a')).ok());
  }
}

// Found by fuzz/names_fuzz (fuzz/regressions/names_fuzz/): kubelet's systemd driver writes a UID's '-' as '_',
// so a UID with '_' would share its slice with another pod's; cgroupfs keeps the UID as it is.
TEST(KubeletNamerTest, UnderSystemdAPodUidWithAnUnderscoreIsRefusedNotConfusedWithAnother) {
  const auto systemd = makeKubeletNamer(KubeletDriver::kSystemd);
  const auto refused = systemd->pod(QosClass::kBurstable, "9d2bc3_9356");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("cannot tell from '-'"));
  const auto slice = systemd->pod(QosClass::kBurstable, "9d2bc3-9356");
  ASSERT_TRUE(slice.ok());
  EXPECT_EQ(systemd->podUidOf(QosClass::kBurstable, slice->leaf()), "9d2bc3-9356");
  const auto cgroupfs = makeKubeletNamer(KubeletDriver::kCgroupfs);
  const auto dir = cgroupfs->pod(QosClass::kBurstable, "9d2bc3_9356");
  ASSERT_TRUE(dir.ok());
  EXPECT_EQ(cgroupfs->podUidOf(QosClass::kBurstable, dir->leaf()), "9d2bc3_9356");
}

// Found by fuzz/names_fuzz: under systemd a container id with '-' read back as its last part.
TEST(KubeletNamerTest, UnderSystemdAContainerIdWithADashReadsBackWhole) {
  const auto systemd = makeKubeletNamer(KubeletDriver::kSystemd);
  const auto scope = systemd->container(QosClass::kBurstable, kUid, "ri-containe");
  ASSERT_TRUE(scope.ok());
  EXPECT_EQ(scope->leaf(), "cri-containerd-ri-containe.scope");
  EXPECT_EQ(systemd->containerIdOf(scope->leaf()), "ri-containe");
  EXPECT_EQ(systemd->containerIdOf("crio-0123abcd.scope"), "0123abcd");  // another runtime's scope still reads
}

TEST(LibvirtNamerTest, MachineNamesAreLossy) {
  EXPECT_EQ(libvirtMachineName(3, "tiny"), "qemu-3-tiny");
  EXPECT_EQ(libvirtMachineName(7, "web_01.prod"), "qemu-7-web01.prod");
  EXPECT_EQ(libvirtMachineName(7, "--a..b--c.."), "qemu-7-a.b-c");
  EXPECT_EQ(libvirtMachineName(7, "../../etc"), "qemu-7-etc");
  EXPECT_EQ(libvirtMachineName(12, "ünïcode vm"), "qemu-12-ncodevm");
  const std::string capped = libvirtMachineName(123, std::string(100, 'x'));
  EXPECT_EQ(capped.size(), 64u);
  EXPECT_EQ(capped.substr(0, 9), "qemu-123-");
  EXPECT_EQ(systemdEscape("qemu-3-tiny"), "qemu\\x2d3\\x2dtiny");
}

TEST(LibvirtNamerTest, ScopesInEveryLayout) {
  const LibvirtNamer systemd(LibvirtLayout::kSystemd, *CgroupPath::parse("machine.slice"));
  const CgroupPath scope = *systemd.scope(3, "tiny");
  EXPECT_EQ(scope.str(), "machine.slice/machine-qemu\\x2d3\\x2dtiny.scope");
  EXPECT_EQ(systemd.vcpu(scope, 1).str(), "machine.slice/machine-qemu\\x2d3\\x2dtiny.scope/vcpu1");

  const LibvirtNamer nested(LibvirtLayout::kSystemdWithLibvirtLevel, *CgroupPath::parse("system.slice/machine.slice"));
  const CgroupPath nested_scope = *nested.scope(4, "db");
  EXPECT_EQ(nested.emulator(nested_scope).str(),
            "system.slice/machine.slice/machine-qemu\\x2d4\\x2ddb.scope/libvirt/emulator");
  EXPECT_EQ(nested.iothread(nested_scope, 2).str(),
            "system.slice/machine.slice/machine-qemu\\x2d4\\x2ddb.scope/libvirt/iothread2");

  const LibvirtNamer plain(LibvirtLayout::kNoSystemd, *CgroupPath::parse("machine"));
  EXPECT_EQ(plain.vcpu(*plain.scope(3, "tiny"), 0).str(), "machine/qemu-3-tiny.libvirt-qemu/vcpu0");
}

TEST(LibvirtNamerTest, FindsTheScopeFromTheQemuProcess) {
  // As /proc/<qemu>/cgroup reads on a v1 host without systemd (the emulator thread group).
  constexpr char kV1[] =
      "12:pids:/\n"
      "4:cpuset:/machine/qemu-3-tiny.libvirt-qemu/emulator\n"
      "3:cpu,cpuacct:/machine/qemu-3-tiny.libvirt-qemu/emulator\n"
      "2:memory:/supervisor\n"
      "0::/machine/qemu-3-tiny.libvirt-qemu/emulator\n";
  const CgroupPath machine = *CgroupPath::parse("machine");
  EXPECT_EQ(vmScopeFromProcCgroup(kV1, "cpuset", machine)->str(), "machine/qemu-3-tiny.libvirt-qemu");
  EXPECT_EQ(vmScopeFromProcCgroup(kV1, "cpu", machine)->str(), "machine/qemu-3-tiny.libvirt-qemu");
  EXPECT_EQ(vmScopeFromProcCgroup(kV1, "", machine)->str(), "machine/qemu-3-tiny.libvirt-qemu");
  EXPECT_EQ(vmScopeFromProcCgroup(kV1, "hugetlb", machine).error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(vmScopeFromProcCgroup(kV1, "pids", machine).error().code(), ErrorCode::kNotFound);  // not in a VM scope

  constexpr char kV2[] = "0::/machine.slice/machine-qemu\\x2d9\\x2dweb.scope/libvirt/emulator\n";
  EXPECT_EQ(vmScopeFromProcCgroup(kV2, "", *CgroupPath::parse("machine.slice"))->str(),
            "machine.slice/machine-qemu\\x2d9\\x2dweb.scope");
  EXPECT_FALSE(vmScopeFromProcCgroup(kV2, "", *CgroupPath::parse("machine")).ok());
}

}  // namespace
}  // namespace vri
