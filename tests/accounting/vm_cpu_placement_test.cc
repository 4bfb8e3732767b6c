#include "accounting/vm_cpu_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/cpu_pool.h"
#include "accounting/hwloc_topology.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// 8 cores x 2 threads; siblings are 2k and 2k+1.
std::shared_ptr<const Topology> eightCores() {
  return std::make_shared<const Topology>(std::move(loadSyntheticTopology("pack:1 numa:1 core:8 pu:2")).value());
}

VmCpuRequest dedicatedVm(int vcpus) {
  VmCpuRequest vm;
  vm.name = "web01";
  vm.vcpus = vcpus;
  vm.cpuPolicy = VmCpuPolicy::kDedicated;
  return vm;
}

Result<VmCpuPlacement> plan(const VmCpuRequest& vm, const CpuSet& available) {
  return planVmCpus(*eightCores(), available, vm, CpuTakeOptions{});
}

TEST(VmCpuPlacementTest, GuestSiblingsLandOnHostSiblings) {
  const auto topo = eightCores();
  VmCpuRequest vm = dedicatedVm(4);
  vm.guestThreadsPerCore = 2;
  // CPU 0 is taken, so core 0 is split: the guest pairs must still get whole cores.
  auto placement = planVmCpus(*topo, topo->onlineCpus() - CpuSet{0}, vm, CpuTakeOptions{});
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  auto map = placement->vcpuCpus;
  EXPECT_EQ(topo->cpu(map[0])->core, topo->cpu(map[1])->core);
  EXPECT_EQ(topo->cpu(map[2])->core, topo->cpu(map[3])->core);
  EXPECT_NE(topo->cpu(map[0])->core, topo->cpu(map[2])->core);
  EXPECT_EQ(placement->exclusive.count(), 4);
  EXPECT_TRUE(placement->heldBack.empty());
  EXPECT_TRUE(placement->emulatorCpus.empty());
}

TEST(VmCpuPlacementTest, IsolateGivesEachVcpuACoreAndHoldsTheSiblingBack) {
  VmCpuRequest vm = dedicatedVm(3);
  vm.threadPolicy = ThreadPolicy::kIsolate;
  vm.emulatorPolicy = HelperThreadPolicy::kIsolate;
  auto placement = plan(vm, eightCores()->onlineCpus());
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  EXPECT_THAT(placement->vcpuCpus, ElementsAre(Pair(0, 0), Pair(1, 2), Pair(2, 4)));
  EXPECT_EQ(placement->emulatorCpus.format(), "6");
  EXPECT_EQ(placement->exclusive.format(), "0,2,4,6");
  EXPECT_EQ(placement->heldBack.format(), "1,3,5,7");
}

TEST(VmCpuPlacementTest, RequireRefusesWithoutEnoughWholeCores) {
  VmCpuRequest vm = dedicatedVm(3);
  vm.threadPolicy = ThreadPolicy::kRequire;
  // Cores 0-5 each have one thread taken: only cores 6 and 7 are whole.
  const CpuSet available = *CpuSet::parse("1,3,5,7,9,11,12-15");
  auto fits = plan(vm, available);
  ASSERT_TRUE(fits.ok()) << fits.error().message();
  EXPECT_EQ(fits->exclusive.format(), "12-14");
  EXPECT_EQ(fits->heldBack.format(), "15");  // the spare thread of a core the VM requires whole
  vm.vcpus = 5;
  auto refused = plan(vm, available);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(refused.error().message(),
            "VM web01 (5 dedicated vCPUs) needs 3 whole cores (thread policy require); 2 whole cores are free");
  // prefer takes what there is, splitting cores when it must.
  vm.threadPolicy = ThreadPolicy::kPrefer;
  EXPECT_EQ(plan(vm, available)->exclusive.count(), 5);
}

TEST(VmCpuPlacementTest, MixedVmDedicatesOnlyTheListedVcpus) {
  VmCpuRequest vm = dedicatedVm(4);
  vm.cpuPolicy = VmCpuPolicy::kMixed;
  vm.mixedDedicatedVcpus = {3, 2};
  vm.guestThreadsPerCore = 2;
  vm.iothreads = 2;
  vm.iothreadPolicy = HelperThreadPolicy::kIsolate;
  auto placement = plan(vm, eightCores()->onlineCpus());
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  EXPECT_EQ(placement->vcpuCpus[0], VmCpuPlacement::kShared);
  EXPECT_EQ(placement->vcpuCpus[1], VmCpuPlacement::kShared);
  EXPECT_EQ(placement->vcpuCpus[2], 0);  // guest siblings 2 and 3 on host siblings 0 and 1
  EXPECT_EQ(placement->vcpuCpus[3], 1);
  EXPECT_THAT(placement->iothreadCpus, ElementsAre(Pair(1, 2), Pair(2, 3)));
  EXPECT_EQ(placement->exclusive.format(), "0-3");
}

TEST(VmCpuPlacementTest, SharedVmTakesNothing) {
  VmCpuRequest vm;
  vm.name = "shared";
  vm.vcpus = 4;
  auto placement = plan(vm, eightCores()->onlineCpus());
  ASSERT_TRUE(placement.ok());
  EXPECT_TRUE(placement->exclusive.empty());
  EXPECT_THAT(placement->vcpuCpus, ElementsAre(Pair(0, -1), Pair(1, -1), Pair(2, -1), Pair(3, -1)));
}

TEST(VmCpuPlacementTest, RefusesMalformedRequests) {
  VmCpuRequest vm = dedicatedVm(2);
  vm.cpuPolicy = VmCpuPolicy::kMixed;
  EXPECT_THAT(plan(vm, eightCores()->onlineCpus()).error().message(), HasSubstr("lists no dedicated vCPU"));
  vm.mixedDedicatedVcpus = {2};
  EXPECT_THAT(plan(vm, eightCores()->onlineCpus()).error().message(),
              HasSubstr("dedicated vCPU 2 does not exist (the VM has 2)"));
  vm.mixedDedicatedVcpus = {1, 1};
  EXPECT_THAT(plan(vm, eightCores()->onlineCpus()).error().message(), HasSubstr("listed twice"));
  vm = dedicatedVm(0);
  EXPECT_THAT(plan(vm, eightCores()->onlineCpus()).error().message(), HasSubstr("vCPU count 0 is out of range"));
}

TEST(VmCpuPlacementTest, PoolRecordsHeldBackSiblingsAndRefusesAtomically) {
  auto pool = std::move(CpuPool::create(eightCores(), {})).value();
  VmCpuRequest vm = dedicatedVm(2);
  vm.threadPolicy = ThreadPolicy::kIsolate;
  ASSERT_TRUE(pool.allocateVm("vm/a", vm).ok());
  EXPECT_EQ(pool.grant("vm/a")->cpus.format(), "0,2");
  EXPECT_EQ(pool.grant("vm/a")->heldBack.format(), "1,3");
  EXPECT_EQ(pool.shared().format(), "4-15");
  // 6 more isolated vCPUs would need 12 CPUs and leave none shared.
  vm.vcpus = 6;
  auto refused = pool.allocateVm("vm/b", vm);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("VM web01 needs 12 exclusive CPUs"));
  EXPECT_EQ(pool.grant("vm/b"), nullptr);
  EXPECT_EQ(pool.shared().format(), "4-15");
}

TEST(VmCpuPlacementTest, UserPinsAreTakenExactlyOrRefused) {
  const auto topo = eightCores();
  VmCpuRequest vm = dedicatedVm(3);
  vm.cpuPolicy = VmCpuPolicy::kShared;  // pins override the policy
  vm.pinnedVcpuCpus = {5, VmCpuPlacement::kShared, 9};
  auto placement = planVmCpus(*topo, topo->onlineCpus(), vm, CpuTakeOptions{});
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  EXPECT_THAT(placement->vcpuCpus, ElementsAre(Pair(0, 5), Pair(1, VmCpuPlacement::kShared), Pair(2, 9)));
  EXPECT_EQ(placement->exclusive.format(), "5,9");
  EXPECT_THAT(*dedicatedVcpus(vm), ElementsAre(0, 2));

  vm.emulatorPolicy = HelperThreadPolicy::kIsolate;
  placement = planVmCpus(*topo, topo->onlineCpus(), vm, CpuTakeOptions{});
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  EXPECT_EQ(placement->emulatorCpus.count(), 1);
  EXPECT_FALSE(placement->emulatorCpus.intersects(CpuSet{5, 9}));

  auto refused = planVmCpus(*topo, topo->onlineCpus() - CpuSet{9}, vm, CpuTakeOptions{});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_THAT(refused.error().message(), HasSubstr("<vcpupin> names CPUs 9, which are reserved or held by another"));

  vm.pinnedVcpuCpus = {5, 40, 9};
  EXPECT_THAT(planVmCpus(*topo, topo->onlineCpus(), vm, CpuTakeOptions{}).error().message(),
              HasSubstr("CPUs 40, which are not online"));
  vm.pinnedVcpuCpus = {5, 9, -1, 4};
  EXPECT_THAT(dedicatedVcpus(vm).error().message(), HasSubstr("pins for 4 vCPU ids; the VM has 3"));
  vm.pinnedVcpuCpus = {-1, -1, -1};
  EXPECT_THAT(dedicatedVcpus(vm).error().message(), HasSubstr("name no CPU"));
}

// libvirt starts any subset of a domain's vCPUs: <vcpu current='3'>8</vcpu>
// with vCPUs 0, 4 and 5 enabled.
VmCpuRequest onlineSubset() {
  VmCpuRequest vm = dedicatedVm(3);
  vm.onlineVcpus = {0, 4, 5};
  vm.maxVcpus = 8;
  return vm;
}

TEST(VmCpuPlacementTest, DedicatedPlacesExactlyTheOnlineVcpusById) {
  const auto topo = eightCores();
  auto placement = planVmCpus(*topo, topo->onlineCpus(), onlineSubset(), CpuTakeOptions{});
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  ASSERT_EQ(placement->vcpuCpus.size(), 3u);
  for (int vcpu : {0, 4, 5}) EXPECT_NE(placement->vcpuCpus.at(vcpu), VmCpuPlacement::kShared) << vcpu;
  EXPECT_EQ(placement->exclusive.count(), 3);
  // Every id has a pin; the offline ones the shared pool.
  const std::vector<int> by_id = vcpuCpusById(onlineSubset(), *placement);
  ASSERT_EQ(by_id.size(), 8u);
  for (int vcpu : {1, 2, 3, 6, 7}) EXPECT_EQ(by_id[vcpu], VmCpuPlacement::kShared) << vcpu;
  EXPECT_EQ(by_id[4], placement->vcpuCpus.at(4));
}

TEST(VmCpuPlacementTest, APinnedOfflineVcpuHasItsCpuHeldForIt) {
  const auto topo = eightCores();
  VmCpuRequest vm = onlineSubset();
  vm.cpuPolicy = VmCpuPolicy::kShared;
  vm.pinnedVcpuCpus = {-1, -1, -1, -1, 11, -1, 3};  // vCPU 4 (online) on 11, vCPU 6 (offline) on 3
  auto placement = planVmCpus(*topo, topo->onlineCpus(), vm, CpuTakeOptions{});
  ASSERT_TRUE(placement.ok()) << placement.error().message();
  EXPECT_THAT(placement->vcpuCpus, ElementsAre(Pair(0, -1), Pair(4, 11), Pair(5, -1)));
  EXPECT_EQ(placement->exclusive.format(), "11");
  EXPECT_EQ(placement->heldBack.format(), "3");  // nobody else gets it before vCPU 6 comes online
  EXPECT_EQ(vcpuCpusById(vm, *placement)[6], 3);
  auto taken = planVmCpus(*topo, topo->onlineCpus() - CpuSet{3}, vm, CpuTakeOptions{});
  ASSERT_FALSE(taken.ok());
  EXPECT_THAT(taken.error().message(), HasSubstr("<vcpupin> names CPUs 3, which are reserved or held"));
}

// A dedicated vCPU offline at start holds no CPU until it is brought online (then it gets one: the ledger's
// hot-plug tests).
TEST(VmCpuPlacementTest, MixedPlacesTheDedicatedVcpusThatRunAndNoneThatIsOffline) {
  VmCpuRequest vm = onlineSubset();
  vm.cpuPolicy = VmCpuPolicy::kMixed;
  vm.mixedDedicatedVcpus = {4};
  EXPECT_THAT(*dedicatedVcpus(vm), ElementsAre(4));
  vm.mixedDedicatedVcpus = {1, 4};
  EXPECT_THAT(*dedicatedVcpus(vm), ElementsAre(4));
  EXPECT_TRUE(dedicatesVcpu(vm, 1));
  EXPECT_FALSE(dedicatesVcpu(vm, 0));
  vm.mixedDedicatedVcpus = {8};
  EXPECT_THAT(dedicatedVcpus(vm).error().message(), HasSubstr("vCPU 8 does not exist (the VM has 8)"));
}

TEST(VmCpuPlacementTest, IdsThatCannotBeAreRefused) {
  VmCpuRequest vm = onlineSubset();
  vm.onlineVcpus = {0, 5, 4};
  EXPECT_THAT(validateVcpuIds(vm).error().message(), HasSubstr("must ascend"));
  vm.onlineVcpus = {0, 4};
  EXPECT_THAT(validateVcpuIds(vm).error().message(), HasSubstr("2 online vCPU ids (0,4) for 3 online vCPUs"));
  vm.onlineVcpus = {0, 4, 9};
  EXPECT_THAT(validateVcpuIds(vm).error().message(), HasSubstr("vCPU 9 is online, and the VM has 8 vCPUs"));
  vm = onlineSubset();
  vm.iothreads = 2;
  vm.iothreadIds = {5, 2};
  EXPECT_THAT(validateVcpuIds(vm).error().message(), HasSubstr("iothread ids must ascend"));
  vm.iothreadIds = {2, 5};
  EXPECT_TRUE(validateVcpuIds(vm).ok());
  EXPECT_THAT(iothreadIdsOf(vm), ElementsAre(2, 5));
}

}  // namespace
}  // namespace vri
