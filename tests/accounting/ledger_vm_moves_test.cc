// The ledger's live moves of a VM's vCPUs and emulator, on a real sqlite file:
// what moves, what the request becomes, every refusal changing nothing, and
// the moved placement surviving a reopen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using Thread = VmThreadMove::Thread;
constexpr int kShared = VmCpuPlacement::kShared;

// 16 CPUs: node 0 holds CPUs 0-7, node 1 CPUs 8-15; siblings are n and n+1. CPUs 0-1 reserved.
class LedgerVmMovesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_ = std::make_shared<const Topology>(
        std::move(loadSyntheticTopology("pack:1 numa:2(memory=32GiB) core:4 pu:2")).value());
    config_.pool.reserved.count = 2;
    config_.allocatableMemoryBytes = 64ULL << 30;
    ledger_ = open();
  }
  std::unique_ptr<Ledger> open() {
    auto store = SqliteLedgerStore::open(tmp_.sub("ledger.db"), Durability::kNormal);
    EXPECT_TRUE(store.ok()) << store.error().message();
    auto ledger = Ledger::open(topology_, config_, std::move(store).value());
    EXPECT_TRUE(ledger.ok()) << ledger.error().message();
    return std::move(ledger).value();
  }
  static VmSpec vm(const std::string& tail, VmCpuPolicy policy, int vcpus) {
    VmSpec spec;
    spec.uuid = "8f0c1a52-0000-4000-8000-0000000000" + tail;
    spec.cpu.name = "vm" + tail;
    spec.cpu.vcpus = vcpus;
    spec.cpu.cpuPolicy = policy;
    spec.memoryBytes = 1ULL << 30;
    return spec;
  }
  static VmThreadMove vcpu(int id, std::optional<int> cpu) { return {Thread::kVcpu, id, cpu}; }
  static VmThreadMove emulator(std::optional<int> cpu) { return {Thread::kEmulator, 0, cpu}; }
  VmRecord record(const std::string& uuid) { return *ledger_->findVm(uuid); }
  CpuSet shared() const {
    const StatePtr now = ledger_->state();
    return now->shared();
  }
  CpuSet freeForExclusive() const {
    const StatePtr now = ledger_->state();
    return now->pool.freeForExclusive();
  }
  int64_t sharedDemand() const {
    const StatePtr now = ledger_->state();
    return now->totals.sharedDemandMilli;
  }
  void expectInvariants() {
    const StatePtr now = ledger_->state();
    auto checked = checkLedgerInvariants(*now, *topology_, config_);
    EXPECT_TRUE(checked.ok()) << checked.error().message();
  }
  // Refused with `why`, and the ledger exactly as it was.
  void expectRefused(const std::string& uuid, const std::vector<VmThreadMove>& moves, const std::string& why) {
    const StatePtr before = ledger_->state();
    const std::string vms_before = encodeVm(*before->vm(uuid));
    auto moved = ledger_->apply(&Ledger::decideMoveVm, uuid, moves);
    ASSERT_FALSE(moved.ok()) << why;
    EXPECT_THAT(moved.error().message(), HasSubstr(why));
    const StatePtr after = ledger_->state();
    EXPECT_EQ(after.get(), before.get()) << "a refusal published a state";
    EXPECT_EQ(encodeVm(*after->vm(uuid)), vms_before);
  }

  testing::TempDir tmp_;
  std::shared_ptr<const Topology> topology_;
  LedgerConfig config_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(LedgerVmMovesTest, DedicatedVcpuMovesToAFreeCpuAndItsOldOneReturnsToTheSharedPool) {
  const VmSpec db = vm("01", VmCpuPolicy::kDedicated, 2);
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, db);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const int from = placed->vcpuCpus.at(0);
  const int node = topology_->cpu(from)->numaNode;
  int to = -1;
  for (int cpu : freeForExclusive()) {
    if (topology_->cpu(cpu)->numaNode == node) to = cpu;
  }
  ASSERT_NE(to, -1);
  auto moved = ledger_->apply(&Ledger::decideMoveVm, db.uuid, {vcpu(0, to)});
  ASSERT_TRUE(moved.ok()) << moved.error().message();
  EXPECT_EQ(moved->vcpuCpus.at(0), to);
  EXPECT_EQ(moved->vcpuCpus.at(1), placed->vcpuCpus.at(1));
  EXPECT_TRUE(moved->exclusive.contains(to));
  EXPECT_FALSE(moved->exclusive.contains(from));
  EXPECT_TRUE(shared().contains(from));
  EXPECT_FALSE(shared().contains(to));
  EXPECT_EQ(record(db.uuid).spec.cpu.cpuPolicy, VmCpuPolicy::kDedicated);  // the request is unchanged
  EXPECT_EQ(moved->mems, placed->mems);                                    // and so is the memory
  expectInvariants();
  // The same move again changes nothing; the moved placement is what a reopened ledger holds.
  const StatePtr now = ledger_->state();
  EXPECT_TRUE(ledger_->apply(&Ledger::decideMoveVm, db.uuid, {vcpu(0, to)}).ok());
  const StatePtr again = ledger_->state();
  EXPECT_EQ(again.get(), now.get());
  ledger_.reset();
  ledger_ = open();
  EXPECT_EQ(record(db.uuid).placement.vcpuCpus.at(0), to);
  EXPECT_EQ(ledger_->apply(&Ledger::decideAdmitVm, db)->vcpuCpus.at(0),
            to);  // the VM's spec admitted again: idempotent
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, TwoDedicatedThreadsOfOneVmSwapCpus) {
  VmSpec db = vm("02", VmCpuPolicy::kDedicated, 2);
  db.cpu.emulatorPolicy = HelperThreadPolicy::kIsolate;
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, db);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const int a = placed->vcpuCpus.at(0), b = placed->vcpuCpus.at(1), e = *placed->emulatorCpus.begin();
  auto swapped = ledger_->apply(&Ledger::decideMoveVm, db.uuid, {vcpu(0, b)});
  ASSERT_TRUE(swapped.ok()) << swapped.error().message();
  EXPECT_EQ(swapped->vcpuCpus.at(0), b);
  EXPECT_EQ(swapped->vcpuCpus.at(1), a);
  EXPECT_EQ(swapped->exclusive, placed->exclusive);
  auto with_emulator = ledger_->apply(&Ledger::decideMoveVm, db.uuid, {emulator(a)});
  ASSERT_TRUE(with_emulator.ok()) << with_emulator.error().message();
  EXPECT_EQ(with_emulator->emulatorCpus, CpuSet{a});
  EXPECT_EQ(with_emulator->vcpuCpus.at(1), e);
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, ASharedVcpuGivenACpuBecomesDedicatedAndGivenBackJoinsTheSharedDemand) {
  const VmSpec web = vm("03", VmCpuPolicy::kShared, 2);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, web).ok());
  const int64_t demand = sharedDemand();
  auto moved = ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(1, 9)});
  ASSERT_TRUE(moved.ok()) << moved.error().message();
  EXPECT_EQ(moved->vcpuCpus.at(0), kShared);
  EXPECT_EQ(moved->vcpuCpus.at(1), 9);
  VmRecord now = record(web.uuid);
  EXPECT_EQ(now.spec.cpu.cpuPolicy, VmCpuPolicy::kMixed);
  EXPECT_EQ(now.spec.cpu.mixedDedicatedVcpus, std::vector<int>{1});
  EXPECT_EQ(sharedDemand(), demand - config_.sharedVcpuMilli);
  EXPECT_FALSE(shared().contains(9));
  EXPECT_TRUE(now.placement.mems.empty());  // its memory was never bound and is not now

  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(0, 10)}).ok());
  EXPECT_EQ(record(web.uuid).spec.cpu.cpuPolicy, VmCpuPolicy::kDedicated);
  EXPECT_TRUE(record(web.uuid).spec.cpu.mixedDedicatedVcpus.empty());

  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(0, std::nullopt), vcpu(1, std::nullopt)}).ok());
  now = record(web.uuid);
  EXPECT_EQ(now.spec.cpu.cpuPolicy, VmCpuPolicy::kShared);
  EXPECT_TRUE(now.placement.exclusive.empty());
  EXPECT_EQ(sharedDemand(), demand);
  EXPECT_TRUE(shared().contains(9));
  // The VM's spec as it is now admits idempotently (what its rewritten metadata reads as).
  EXPECT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, now.spec).ok());
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, AnEmulatorGivenACpuIsIsolatedAndGivenBackShared) {
  const VmSpec web = vm("04", VmCpuPolicy::kShared, 1);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, web).ok());
  auto isolated = ledger_->apply(&Ledger::decideMoveVm, web.uuid, {emulator(5)});
  ASSERT_TRUE(isolated.ok()) << isolated.error().message();
  EXPECT_EQ(isolated->emulatorCpus, CpuSet{5});
  EXPECT_EQ(record(web.uuid).spec.cpu.emulatorPolicy, HelperThreadPolicy::kIsolate);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, web.uuid, {emulator(std::nullopt)}).ok());
  EXPECT_TRUE(record(web.uuid).placement.emulatorCpus.empty());
  EXPECT_EQ(record(web.uuid).spec.cpu.emulatorPolicy, HelperThreadPolicy::kShared);
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, AUserPinnedVmsPinsFollowTheMove) {
  VmSpec pinned = vm("05", VmCpuPolicy::kShared, 2);
  pinned.cpu.pinnedVcpuCpus = {4, kShared};
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, pinned).ok());
  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, pinned.uuid, {vcpu(0, 6), vcpu(1, 7)}).ok());
  EXPECT_EQ(record(pinned.uuid).spec.cpu.pinnedVcpuCpus, (std::vector<int>{6, 7}));
  EXPECT_EQ(record(pinned.uuid).placement.exclusive.format(), "6-7");
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, EveryRefusalSaysWhyAndChangesNothing) {
  ContainerSpec app{"app", "app0001", false, 2000, 2000, 1ULL << 30, std::nullopt};
  auto held = ledger_->apply(&Ledger::decideAdmitContainer, {"p1", "default/web", QosClass::kGuaranteed, 0, 0}, app,
                             kNoneFinished);
  ASSERT_TRUE(held.ok()) << held.error().message();
  const int theirs = held->exclusive.first();
  const VmSpec db = vm("06", VmCpuPolicy::kDedicated, 1);
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, db);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const int other_node_cpu = topology_->cpu(placed->vcpuCpus.at(0))->numaNode == 0 ? 12 : 4;
  VmSpec sparse = vm("07", VmCpuPolicy::kShared, 1);
  sparse.cpu.maxVcpus = 2;
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, sparse).ok());
  VmSpec cores = vm("08", VmCpuPolicy::kDedicated, 1);
  cores.cpu.threadPolicy = ThreadPolicy::kIsolate;
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, cores).ok());
  VmSpec defined = vm("09", VmCpuPolicy::kShared, 1);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideReserveVm, defined).ok());

  expectRefused(db.uuid, {vcpu(0, theirs)},
                "CPU " + std::to_string(theirs) + " is held by container app of pod default/web");
  expectRefused(db.uuid, {vcpu(0, 0)}, "CPU 0 is reserved (reserved: 0-1)");
  expectRefused(db.uuid, {vcpu(0, other_node_cpu)}, "bound memory does not move");
  expectRefused(db.uuid, {vcpu(0, 99)}, "this host has no online CPU 99 (online: 0-15)");
  expectRefused(db.uuid, {vcpu(3, 12)}, "VM vm06 has no vCPU 3 (its vCPUs are 0-0)");
  expectRefused(db.uuid, {}, "nothing to move");
  expectRefused(sparse.uuid, {vcpu(1, 12)}, "vCPU 1 is offline");
  expectRefused(sparse.uuid, {vcpu(0, placed->vcpuCpus.at(0))}, "is held by VM vm06");
  expectRefused(cores.uuid, {vcpu(0, 12)}, "holds whole cores (thread policy isolate)");
  expectRefused(defined.uuid, {vcpu(0, 12)}, "is defined but not running");
  // All or nothing: a good move and a bad one in one call.
  expectRefused(sparse.uuid, {emulator(13), vcpu(0, 0)}, "CPU 0 is reserved");
  EXPECT_EQ(ledger_->apply(&Ledger::decideMoveVm, "8f0c1a52-0000-4000-8000-0000000000ff", {vcpu(0, 12)}).error().code(),
            ErrorCode::kNotFound);
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, TheSharedPoolKeepsWhatItsTenantsNeed) {
  // 16 CPUs, all shared, for shared tenants asking for exactly 16: 13 for a pod, 2 vCPUs of web, 1 of api.
  ContainerSpec busy{"busy", "busy0001", false, 13000, 0, std::nullopt, 1ULL << 30};
  ASSERT_TRUE(ledger_
                  ->apply(&Ledger::decideAdmitContainer, {"p2", "default/busy", QosClass::kBurstable, 0, 0}, busy,
                          kNoneFinished)
                  .ok());
  const VmSpec web = vm("10", VmCpuPolicy::kShared, 2);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, web).ok());
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, vm("11", VmCpuPolicy::kShared, 1)).ok());
  // An emulator taking a CPU takes it from tenants that need every one.
  expectRefused(web.uuid, {emulator(14)}, "must stay shared");
  // A vCPU taking a CPU takes its own demand with it: 15 CPUs for 15.
  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(1, 15)}).ok());
  expectRefused(web.uuid, {emulator(14)}, "must stay shared");
  expectRefused(web.uuid, {vcpu(0, 14), emulator(13)}, "must stay shared");
  ASSERT_TRUE(ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(0, 14)}).ok());
  // Both given back: their demand must fit the pool they return to.
  auto back = ledger_->apply(&Ledger::decideMoveVm, web.uuid, {vcpu(0, std::nullopt), vcpu(1, std::nullopt)});
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(sharedDemand(), 16000);
  expectInvariants();
}

// vCPUs brought online (virsh setvcpus --live) and taken offline.
TEST_F(LedgerVmMovesTest, AVcpuPluggedIntoADedicatedVmGetsItsOwnCpuOnItsMemorysNodeAndUnplugGivesItBack) {
  VmSpec db = vm("20", VmCpuPolicy::kDedicated, 1);
  db.cpu.maxVcpus = 3;
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, db);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const int node = topology_->cpu(placed->vcpuCpus.at(0))->numaNode;
  auto plugged = ledger_->apply(&Ledger::decideVcpusOnline, db.uuid, {0, 2});
  ASSERT_TRUE(plugged.ok()) << plugged.error().message();
  EXPECT_TRUE(plugged->notes.empty());
  const int cpu = plugged->placement.vcpuCpus.at(2);
  ASSERT_NE(cpu, kShared);
  EXPECT_EQ(topology_->cpu(cpu)->numaNode, node);
  EXPECT_FALSE(shared().contains(cpu));
  EXPECT_EQ(record(db.uuid).spec.cpu.onlineVcpus, (std::vector<int>{0, 2}));
  EXPECT_EQ(record(db.uuid).spec.cpu.cpuPolicy, VmCpuPolicy::kDedicated);
  expectInvariants();
  // The VM's spec as it now is admits idempotently (what its live XML reads as).
  EXPECT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, record(db.uuid).spec).ok());
  auto unplugged = ledger_->apply(&Ledger::decideVcpusOnline, db.uuid, {0});
  ASSERT_TRUE(unplugged.ok()) << unplugged.error().message();
  EXPECT_FALSE(unplugged->placement.vcpuCpus.contains(2));
  EXPECT_TRUE(shared().contains(cpu));
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, APluggedVcpuWithNoFreeCpuRunsOnTheSharedPoolCountedAndSaysWhy) {
  // Node 0 (CPUs 0-7, 0-1 reserved) filled by a pod, so a VM bound there has no CPU to grow into.
  ContainerSpec app{"app", "app0001", false, 4000, 4000, 1ULL << 30, std::nullopt};
  VmSpec db = vm("21", VmCpuPolicy::kDedicated, 2);
  db.cpu.maxVcpus = 3;
  db.cpu.preferredNumaNodes = {0};
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, db);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  ASSERT_EQ(placed->mems.format(), "0");
  ASSERT_TRUE(
      ledger_
          ->apply(&Ledger::decideAdmitContainer, {"p1", "default/web", QosClass::kGuaranteed, 0, 0}, app, kNoneFinished)
          .ok());
  ASSERT_TRUE((freeForExclusive() & CpuSet::parse("0-7").value()).empty()) << freeForExclusive().format();
  const int64_t demand = sharedDemand();
  auto plugged = ledger_->apply(&Ledger::decideVcpusOnline, db.uuid, {0, 1, 2});
  ASSERT_TRUE(plugged.ok()) << plugged.error().message();
  EXPECT_EQ(plugged->placement.vcpuCpus.at(2), kShared);
  ASSERT_EQ(plugged->notes.size(), 1u);
  EXPECT_EQ(plugged->notes[0], "vCPU 2 runs on the shared pool: no CPU is free for it on NUMA nodes 0");
  EXPECT_EQ(sharedDemand(), demand + config_.sharedVcpuMilli);
  EXPECT_EQ(record(db.uuid).spec.cpu.cpuPolicy, VmCpuPolicy::kMixed);
  EXPECT_EQ(record(db.uuid).spec.cpu.mixedDedicatedVcpus, (std::vector<int>{0, 1}));
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, ASharedVmsPluggedVcpuAddsDemandOrIsRefusedWhenThePoolCannotTakeIt) {
  ContainerSpec busy{"busy", "busy0001", false, 15000, 0, std::nullopt, 1ULL << 30};
  ASSERT_TRUE(ledger_
                  ->apply(&Ledger::decideAdmitContainer, {"p2", "default/busy", QosClass::kBurstable, 0, 0}, busy,
                          kNoneFinished)
                  .ok());
  VmSpec web = vm("22", VmCpuPolicy::kShared, 1);
  web.cpu.maxVcpus = 2;
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, web).ok());
  const StatePtr before = ledger_->state();
  auto refused = ledger_->apply(&Ledger::decideVcpusOnline, web.uuid, {0, 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("needs 1000m of the shared pool"));
  const StatePtr after = ledger_->state();
  EXPECT_EQ(after.get(), before.get());
  expectInvariants();
  EXPECT_EQ(ledger_->apply(&Ledger::decideVcpusOnline, web.uuid, {0, 5}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ledger_->apply(&Ledger::decideVcpusOnline, web.uuid, {1, 0}).error().code(), ErrorCode::kInvalidArgument);
}

TEST_F(LedgerVmMovesTest, AUserPinnedOfflineVcpuTakesTheCpuHeldForItWhenPlugged) {
  VmSpec pinned = vm("23", VmCpuPolicy::kShared, 1);
  pinned.cpu.maxVcpus = 2;
  pinned.cpu.pinnedVcpuCpus = {4, 5};
  auto placed = ledger_->apply(&Ledger::decideAdmitVm, pinned);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_EQ(placed->heldBack.format(), "5");
  auto plugged = ledger_->apply(&Ledger::decideVcpusOnline, pinned.uuid, {0, 1});
  ASSERT_TRUE(plugged.ok()) << plugged.error().message();
  EXPECT_EQ(plugged->placement.vcpuCpus.at(1), 5);
  EXPECT_TRUE(plugged->placement.heldBack.empty());
  auto unplugged = ledger_->apply(&Ledger::decideVcpusOnline, pinned.uuid, {0});
  ASSERT_TRUE(unplugged.ok()) << unplugged.error().message();
  EXPECT_EQ(unplugged->placement.heldBack.format(), "5");  // held for it again
  EXPECT_FALSE(shared().contains(5));
  expectInvariants();
}

TEST_F(LedgerVmMovesTest, APluggedVcpuTheSharedPoolCannotSpareACpuForRunsOnItInstead) {
  ledger_.reset();
  config_.sharedVcpuMilli = 200;
  ledger_ = open();
  // Shared tenants ask for 14.8 CPUs: 15 must stay shared; the dedicated VM's first vCPU takes the 16th.
  ContainerSpec busy{"busy", "busy0001", false, 14800, 0, std::nullopt, 1ULL << 30};
  ASSERT_TRUE(ledger_
                  ->apply(&Ledger::decideAdmitContainer, {"p2", "default/busy", QosClass::kBurstable, 0, 0}, busy,
                          kNoneFinished)
                  .ok());
  VmSpec db = vm("24", VmCpuPolicy::kDedicated, 1);
  db.cpu.maxVcpus = 2;
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitVm, db).ok());
  auto plugged = ledger_->apply(&Ledger::decideVcpusOnline, db.uuid, {0, 1});
  ASSERT_TRUE(plugged.ok()) << plugged.error().message();
  EXPECT_EQ(plugged->placement.vcpuCpus.at(1), kShared);
  ASSERT_EQ(plugged->notes.size(), 1u);
  EXPECT_EQ(plugged->notes[0], "vCPU 1 runs on the shared pool: the shared pool cannot spare a CPU");
  EXPECT_EQ(sharedDemand(), 15000);
  expectInvariants();
}

}  // namespace
}  // namespace vri
