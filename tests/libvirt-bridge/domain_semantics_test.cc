// Domain XML read as libvirt means it, through the hook and vrid: the vCPUs
// libvirt starts (any subset of the ids), offline vCPUs, and iothread ids that
// are not 1…n. Domains in tests/data/domains/ are as `virsh dumpxml` prints them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libvirt-bridge/domain_xml.h"
#include "tests/libvirt-bridge/hook_harness.h"

namespace vri {
namespace {

using testing::domainFile;
using testing::domainXml;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HookTest;
using testing::libvirtRefusal;

constexpr char kPinnedUuid[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a51";
constexpr char kDedicatedUuid[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a52";
constexpr char kIothreadsUuid[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a53";
constexpr char kOtherUuid[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a5f";
constexpr char kThirdUuid[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a5e";

template <typename T>
std::vector<int64_t> ids(const google::protobuf::RepeatedField<T>& field) {
  return {field.begin(), field.end()};
}

TEST_F(HookTest, AUserPinOnAVcpuPastTheCurrentCountHoldsItsCpu) {
  // <vcpu current='3'>8</vcpu> with vCPUs 0, 4 and 5 online, and vCPU 4 pinned to CPU 5.
  const std::string xml = domainFile("online-subset-pinned.xml");
  ASSERT_EQ(hook("online-subset", "prepare", "begin", xml).exitCode, 0);
  const v1::VmAllocation placed = vm(kPinnedUuid).allocation();
  EXPECT_THAT(ids(placed.online_vcpus()), ElementsAre(0, 4, 5));
  ASSERT_EQ(placed.vcpu_cpus_size(), 8);
  EXPECT_EQ(placed.vcpu_cpus(4), 5);
  EXPECT_EQ(placed.exclusive_cpus(), "5");
  for (int vcpu : {0, 1, 2, 3, 5, 6, 7}) EXPECT_EQ(placed.vcpu_cpus(vcpu), -1) << vcpu;

  // Nobody else gets CPU 5: neither a dedicated VM nor a pin of its own.
  ASSERT_EQ(hook("second", "prepare", "begin", domainXml("second", kOtherUuid, 4, "dedicated")).exitCode, 0);
  EXPECT_FALSE(CpuSet::parse(vm(kOtherUuid).allocation().exclusive_cpus())->contains(5));
  HookOutcome taken = hook("third", "prepare", "begin",
                           domainXml("third", kThirdUuid, 1, "", "<cputune><vcpupin vcpu='0' cpuset='5'/></cputune>"));
  EXPECT_EQ(taken.exitCode, 1);
  EXPECT_THAT(taken.err, HasSubstr("<vcpupin> names CPUs 5"));

  // started: vcpu4's cgroup is on CPU 5, the other two that run on the shared pool.
  vrid_.fakeQemu("machine/qemu-3-online-subset.libvirt-qemu", 5252, kPinnedUuid, std::vector<int>{0, 4, 5});
  writePidFile("online-subset", 5252);
  HookOutcome started = hook("online-subset", "started", "begin", xml);
  ASSERT_EQ(started.exitCode, 0) << started.err;
  const std::string shared = vm(kPinnedUuid).allocation().shared_cpus();
  EXPECT_EQ(cpus("machine/qemu-3-online-subset.libvirt-qemu/vcpu4"), "5");
  EXPECT_EQ(cpus("machine/qemu-3-online-subset.libvirt-qemu/vcpu0"), shared);
  EXPECT_EQ(cpus("machine/qemu-3-online-subset.libvirt-qemu/vcpu5"), shared);
}

TEST_F(HookTest, ADedicatedVmPlacesEveryVcpuThatRunsAndPinsTheOfflineOnesToTheSharedPool) {
  const std::string xml = domainFile("online-subset-dedicated.xml");
  HookOutcome restored = hook("online-dedicated", "restore", "begin", xml);
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  const v1::VmAllocation placed = vm(kDedicatedUuid).allocation();
  EXPECT_EQ(CpuSet::parse(placed.exclusive_cpus())->count(), 3);
  for (int vcpu : {0, 4, 5}) EXPECT_GE(placed.vcpu_cpus(vcpu), 0) << vcpu;
  // The printed definition pins every vCPU id: a vCPU brought online later runs on the shared pool.
  auto printed = parseDomainXml(restored.out);
  ASSERT_TRUE(printed.ok()) << printed.error().message();
  ASSERT_EQ(printed->cputune.vcpupins.size(), 8u);
  for (int vcpu = 0; vcpu < 8; ++vcpu) {
    const bool online = vcpu == 0 || vcpu == 4 || vcpu == 5;
    EXPECT_EQ(printed->cputune.vcpupins.at(vcpu).format(),
              online ? std::to_string(placed.vcpu_cpus(vcpu)) : placed.shared_cpus())
        << vcpu;
  }
  EXPECT_EQ(libvirtRefusal(restored.out), "");
  EXPECT_THAT(printed->onlineVcpus, ElementsAre(0, 4, 5));

  vrid_.fakeQemu("machine/qemu-4-online-dedicated.libvirt-qemu", 5353, kDedicatedUuid, std::vector<int>{0, 4, 5});
  writePidFile("online-dedicated", 5353);
  ASSERT_EQ(hook("online-dedicated", "started", "begin", restored.out).exitCode, 0);
  for (int vcpu : {0, 4, 5}) {
    EXPECT_EQ(cpus("machine/qemu-4-online-dedicated.libvirt-qemu/vcpu" + std::to_string(vcpu)),
              std::to_string(placed.vcpu_cpus(vcpu)));
  }
  EXPECT_FALSE(vrid_.fs().exists({"cpuset", *CgroupPath::parse("machine/qemu-4-online-dedicated.libvirt-qemu/vcpu1")}));
}

TEST_F(HookTest, IothreadIdsAreThoseOfTheDomainWhenRestoredAndPlacedAgain) {
  const std::string xml = domainFile("iothread-ids.xml");
  HookOutcome restored = hook("iothread-ids", "restore", "begin", xml);
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  auto printed = parseDomainXml(restored.out);
  ASSERT_TRUE(printed.ok()) << printed.error().message();
  const v1::VmAllocation placed = vm(kIothreadsUuid).allocation();
  EXPECT_THAT(ids(placed.iothread_ids()), ElementsAre(2, 5));
  ASSERT_EQ(printed->cputune.iothreadpins.size(), 2u);
  EXPECT_EQ(printed->cputune.iothreadpins.at(2).format(), std::to_string(placed.iothread_cpus(0)));
  EXPECT_EQ(printed->cputune.iothreadpins.at(5).format(), std::to_string(placed.iothread_cpus(1)));
  EXPECT_EQ(libvirtRefusal(restored.out), "");  // libvirt's parser takes it (iothreads 1..n it would refuse)
  // Restoring the saved image again places it identically.
  HookOutcome again = hook("iothread-ids", "restore", "begin", restored.out);
  ASSERT_EQ(again.exitCode, 0) << again.err;
  EXPECT_EQ(again.out, restored.out);
}

// libvirt keeps iothread ids as unsigned ints: the largest, 4294967295, is placed, written back and
// taken by libvirt's own parser as any other.
TEST_F(HookTest, TheLargestIothreadIdLibvirtTakesIsPlacedAndWrittenBack) {
  std::string xml = domainFile("iothread-ids.xml");
  xml.replace(xml.find("<iothread id='5'/>"), 18, "<iothread id='4294967295'/>");
  ASSERT_EQ(libvirtRefusal(xml), "");
  HookOutcome restored = hook("iothread-ids", "restore", "begin", xml);
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  const v1::VmAllocation placed = vm(kIothreadsUuid).allocation();
  EXPECT_THAT(ids(placed.iothread_ids()), ElementsAre(2, 4294967295));
  auto printed = parseDomainXml(restored.out);
  ASSERT_TRUE(printed.ok()) << printed.error().message();
  EXPECT_EQ(printed->cputune.iothreadpins.at(4294967295u).format(), std::to_string(placed.iothread_cpus(1)));
  EXPECT_EQ(libvirtRefusal(restored.out), "");
}

}  // namespace
}  // namespace vri
