// The ledger on a real sqlite file: admission, identity, persistence, and its
// invariants under 100,000 random operations and 16 concurrent threads.
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "accounting/hwloc_topology.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Topology> synthetic(const char* description) {
  return std::make_shared<const Topology>(std::move(loadSyntheticTopology(description)).value());
}

LedgerConfig config(int reserved = 2, uint64_t memory = 64ULL << 30) {
  LedgerConfig c;
  c.pool.reserved.count = reserved;
  c.allocatableMemoryBytes = memory;
  c.vmMemoryOverheadBytes = 256ULL << 20;
  return c;
}

std::unique_ptr<Ledger> openLedger(const std::string& file, std::shared_ptr<const Topology> topo, LedgerConfig c) {
  auto store = SqliteLedgerStore::open(file, Durability::kNormal);
  EXPECT_TRUE(store.ok()) << store.error().message();
  auto ledger = Ledger::open(std::move(topo), std::move(c), std::move(store).value());
  EXPECT_TRUE(ledger.ok()) << ledger.error().message();
  return std::move(ledger).value();
}

PodSpec guaranteed(const std::string& uid) { return {uid, "default/" + uid, QosClass::kGuaranteed, 0, 0}; }
PodSpec burstable(const std::string& uid) { return {uid, "default/" + uid, QosClass::kBurstable, 0, 0}; }
ContainerSpec cpus(const std::string& name, int n, uint64_t memory = 1ULL << 30) {
  return {name, name + "0001", false, n * 1000, n * 1000, memory, std::nullopt};
}
ContainerSpec shared(const std::string& name, int64_t milli) {
  return {name, name + "0001", false, milli, 0, std::nullopt, 256ULL << 20};
}

VmSpec dedicatedVm(const std::string& uuid, int vcpus) {
  VmSpec vm;
  vm.uuid = uuid;
  vm.cpu.name = "web01";
  vm.cpu.vcpus = vcpus;
  vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
  vm.memoryBytes = 2ULL << 30;
  return vm;
}

void expectInvariants(const Ledger& ledger, const LedgerConfig& c) {
  const StatePtr now = ledger.state();
  auto checked = checkLedgerInvariants(*now, ledger.topology(), c);
  ASSERT_TRUE(checked.ok()) << checked.error().message();
}

TEST(LedgerTest, AdmitsIdempotentlyByIdentity) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("ledger.db"), synthetic("pack:1 numa:1(memory=64GiB) core:8 pu:2"), config());
  auto first = ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p1"), cpus("app", 4), kNoneFinished);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->exclusive.count(), 4);
  // The same request again, and the container recreated under a new id: the same CPUs.
  EXPECT_EQ(ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p1"), cpus("app", 4), kNoneFinished)->exclusive,
            first->exclusive);
  ContainerSpec restarted = cpus("app", 4);
  restarted.id = "app0002";
  EXPECT_EQ(ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p1"), restarted, kNoneFinished)->exclusive,
            first->exclusive);
  StatePtr now = ledger->state();
  EXPECT_EQ(now->pods.at("p1").containers.at("app").spec.id, "app0002");
  // Other resources under the same identity are a resize, not an admit.
  EXPECT_EQ(
      ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p1"), cpus("app", 2), kNoneFinished).error().code(),
      ErrorCode::kFailedPrecondition);
  EXPECT_EQ(
      ledger->apply(&Ledger::decideAdmitContainer, burstable("p1"), shared("x", 100), kNoneFinished).error().code(),
      ErrorCode::kFailedPrecondition);
  // Shared containers get the shared pool.
  auto web = ledger->apply(&Ledger::decideAdmitContainer, burstable("p2"), shared("web", 500), kNoneFinished);
  ASSERT_TRUE(web.ok());
  EXPECT_TRUE(web->exclusive.empty());
  now = ledger->state();
  EXPECT_EQ(web->cpus, now->shared());
  EXPECT_FALSE(web->cpus.intersects(first->exclusive));
  expectInvariants(*ledger, config());
}

TEST(LedgerTest, RefusesWithReasonsAndChangesNothing) {
  testing::TempDir tmp;
  auto c = config(2, 8ULL << 30);
  auto ledger = openLedger(tmp.sub("ledger.db"), synthetic("pack:1 numa:1(memory=64GiB) core:8 pu:2"), c);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(ledger
                    ->apply(&Ledger::decideAdmitContainer, burstable("b" + std::to_string(i)),
                            shared("c" + std::to_string(i), 1000), kNoneFinished)
                    .ok());
  }
  const auto before = ledger->state();
  // 16 CPUs, 5 CPUs' worth requested by shared tenants: at most 11 can go exclusive.
  auto vm = ledger->apply(&Ledger::decideAdmitVm, dedicatedVm("8f0c1a52-0000-4000-8000-000000000001", 12));
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(vm.error().message(),
            "VM web01 needs 12 exclusive CPUs; 14 are free but 5 of the 16 shared CPUs must stay shared, so at most 11 "
            "can be taken; 5 shared tenants request 5000m");
  auto too_shared = ledger->apply(&Ledger::decideAdmitContainer, burstable("b9"), shared("c", 12000), kNoneFinished);
  ASSERT_FALSE(too_shared.ok());
  EXPECT_THAT(too_shared.error().message(),
              HasSubstr("needs 12000m of the shared pool; it has 16 CPUs and 5 shared tenants already request 5000m"));
  auto too_big =
      ledger->apply(&Ledger::decideAdmitContainer, guaranteed("g"), cpus("app", 2, 9ULL << 30), kNoneFinished);
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.error().message(),
              HasSubstr("needs 9216 MiB of memory; 6912 MiB of the 8192 MiB allocatable are free"));
  EXPECT_EQ(ledger
                ->apply(&Ledger::decideAdmitContainer, PodSpec{"../../etc", "x", QosClass::kBurstable, 0, 0},
                        shared("c", 1), kNoneFinished)
                .error()
                .code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ledger->apply(&Ledger::decideAdmitVm, dedicatedVm("not a uuid", 1)).error().code(),
            ErrorCode::kInvalidArgument);
  const auto after = ledger->state();
  EXPECT_EQ(after->grants().size(), before->grants().size());
  EXPECT_EQ(after->shared(), before->shared());
  EXPECT_EQ(after->totals.sharedDemandMilli, before->totals.sharedDemandMilli);
  EXPECT_EQ(after->totals.admittedMemoryBytes, before->totals.admittedMemoryBytes);
  EXPECT_EQ(
      ledger->apply(&Ledger::decideAdmitVm, dedicatedVm("8f0c1a52-0000-4000-8000-000000000001", 11))->exclusive.count(),
      11);
  expectInvariants(*ledger, c);
}

TEST(LedgerTest, AppContainersReuseTheirInitContainersCpus) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("ledger.db"), synthetic("pack:2 numa:2(memory=16GiB) core:4 pu:2"), config());
  ContainerSpec init = cpus("setup", 2);
  init.init = true;
  auto setup = ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p"), init, kNoneFinished);
  ASSERT_TRUE(setup.ok());
  ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitContainer, guaranteed("q"), cpus("other", 2), kNoneFinished).ok());
  auto app = ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p"), cpus("app", 4), kNoneFinished);
  ASSERT_TRUE(app.ok()) << app.error().message();
  EXPECT_TRUE(setup->exclusive.isSubsetOf(app->exclusive));
  const StatePtr now = ledger->state();
  EXPECT_TRUE(now->pods.at("p").containers.at("setup").exclusive.empty());
  expectInvariants(*ledger, config());
}

TEST(LedgerTest, ResizesInPlaceWhenThePoolAllows) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("ledger.db"), synthetic("pack:1 numa:1(memory=64GiB) core:8 pu:2"), config());
  const CpuSet two =
      ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p"), cpus("app", 2), kNoneFinished)->exclusive;
  auto four = ledger->apply(&Ledger::decideResizeContainer, "p", cpus("app", 4));
  ASSERT_TRUE(four.ok()) << four.error().message();
  EXPECT_TRUE(two.isSubsetOf(four->exclusive));
  auto one = ledger->apply(&Ledger::decideResizeContainer, "p", cpus("app", 1));
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->exclusive.isSubsetOf(four->exclusive));
  const auto before = ledger->state();
  EXPECT_FALSE(ledger->apply(&Ledger::decideResizeContainer, "p", cpus("app", 15)).ok());
  StatePtr now = ledger->state();
  EXPECT_EQ(now->grants().at(containerTenant("p", "app")).cpus, one->exclusive);
  now = ledger->state();
  EXPECT_EQ(now->shared(), before->shared());
  // A fractional request runs in the shared pool, as with kubelet; and back to exclusive.
  auto to_shared = ledger->apply(&Ledger::decideResizeContainer, "p", shared("app", 500));
  ASSERT_TRUE(to_shared.ok());
  EXPECT_TRUE(to_shared->exclusive.empty());
  now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 500);
  EXPECT_EQ(ledger->apply(&Ledger::decideResizeContainer, "p", cpus("app", 2))->exclusive.count(), 2);
  now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 0);
  expectInvariants(*ledger, config());
}

TEST(LedgerTest, ResizesAVm) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("ledger.db"), synthetic("pack:2 numa:2(memory=16GiB) core:4 pu:2"), config());
  VmSpec vm = dedicatedVm("8f0c1a52-0000-4000-8000-000000000009", 4);
  const CpuSet four = ledger->apply(&Ledger::decideAdmitVm, vm)->exclusive;
  vm.cpu.vcpus = 2;  // shrinks inside its CPUs
  auto two = ledger->apply(&Ledger::decideResizeVm, vm);
  ASSERT_TRUE(two.ok()) << two.error().message();
  EXPECT_TRUE(two->exclusive.isSubsetOf(four));
  vm.cpu.vcpus = 6;  // grows on the NUMA node it uses
  auto six = ledger->apply(&Ledger::decideResizeVm, vm);
  ASSERT_TRUE(six.ok()) << six.error().message();
  EXPECT_EQ(six->exclusive.count(), 6);
  const auto before = ledger->state();
  vm.cpu.vcpus = 40;  // more than the machine's 32 CPUs
  EXPECT_FALSE(ledger->apply(&Ledger::decideResizeVm, vm).ok());
  StatePtr now = ledger->state();
  EXPECT_EQ(now->grants().at(vmTenant(vm.uuid)).cpus, six->exclusive);
  now = ledger->state();
  EXPECT_EQ(now->shared(), before->shared());
  vm.cpu.vcpus = 4;
  vm.cpu.cpuPolicy = VmCpuPolicy::kShared;  // all vCPUs into the shared pool
  auto shared_vm = ledger->apply(&Ledger::decideResizeVm, vm);
  ASSERT_TRUE(shared_vm.ok()) << shared_vm.error().message();
  EXPECT_TRUE(shared_vm->exclusive.empty());
  now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 4000);
  now = ledger->state();
  EXPECT_TRUE(now->grants().empty());
  expectInvariants(*ledger, config());
}

TEST(LedgerTest, SurvivesARestartAndExplainsAChangedPolicy) {
  testing::TempDir tmp;
  const auto topo = synthetic("pack:1 numa:1(memory=64GiB) core:8 pu:2");
  StatePtr before;
  {
    auto ledger = openLedger(tmp.sub("ledger.db"), topo, config());
    ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitContainer, guaranteed("p"), cpus("app", 4), kNoneFinished).ok());
    ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitContainer, burstable("b"), shared("web", 700), kNoneFinished).ok());
    VmSpec vm = dedicatedVm("8f0c1a52-0000-4000-8000-000000000002", 2);
    vm.cpu.threadPolicy = ThreadPolicy::kIsolate;
    ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitVm, vm).ok());
    before = ledger->state();
  }
  {
    auto again = openLedger(tmp.sub("ledger.db"), topo, config());
    const auto after = again->state();
    EXPECT_EQ(after->grants().size(), before->grants().size());
    for (const auto& [owner, grant] : before->grants())
      EXPECT_EQ(after->grants().at(owner).all(), grant.all()) << owner;
    EXPECT_EQ(after->totals.sharedDemandMilli, 700);
    EXPECT_TRUE(again->loadProblems().empty());
    // One process at a time: a second opening of the file is refused while this one holds it.
    auto second = SqliteLedgerStore::open(tmp.sub("ledger.db"), Durability::kNormal);
    ASSERT_FALSE(second.ok());
    EXPECT_THAT(second.error().message(), HasSubstr("in use by another process"));
  }
  // Reserving more CPUs than before: what now collides is kept out and explained, not a crash loop.
  auto changed = config(8);
  auto third = openLedger(tmp.sub("ledger.db"), topo, changed);
  EXPECT_FALSE(third->loadProblems().empty());
  EXPECT_THAT(third->loadProblems().front(), HasSubstr("allocator policy changed"));
  expectInvariants(*third, changed);
}

// 100,000 random admits, resizes (containers and VMs), releases and restarts on several machines;
// the invariants hold after every one.
TEST(LedgerTest, InvariantsHoldUnderRandomOperations) {
  struct Shape {
    const char* topology;
    int operations;
  };
  for (const Shape& shape :
       {Shape{"pack:1 numa:1(memory=16GiB) core:4 pu:2", 30000}, Shape{"pack:2 numa:2(memory=8GiB) core:4 pu:2", 35000},
        Shape{"pack:2 numa:2(memory=8GiB) l3:2 core:2 pu:1", 35000}}) {
    testing::TempDir tmp;
    const auto topo = synthetic(shape.topology);
    const LedgerConfig c = config(1, 32ULL << 30);
    auto ledger = openLedger(tmp.sub("ledger.db"), topo, c);
    std::mt19937 random(2024);
    std::vector<std::string> pods, vms;
    int accepted = 0, refused = 0;
    for (int op = 0; op < shape.operations; ++op) {
      const int action = static_cast<int>(random() % 100);
      Result<void> done;
      if (action < 30) {
        const std::string uid = "p" + std::to_string(op);
        auto placed = random() % 2 ? ledger->apply(&Ledger::decideAdmitContainer, guaranteed(uid),
                                                   cpus("c", 1 + static_cast<int>(random() % 3)), kNoneFinished)
                                   : ledger->apply(&Ledger::decideAdmitContainer, burstable(uid),
                                                   shared("c", static_cast<int64_t>(random() % 900)), kNoneFinished);
        if (placed.ok()) pods.push_back(uid);
        placed.ok() ? ++accepted : ++refused;
      } else if (action < 45) {
        char uuid[40];
        std::snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", op);
        VmSpec vm = dedicatedVm(uuid, 1 + static_cast<int>(random() % 3));
        vm.cpu.cpuPolicy = static_cast<VmCpuPolicy>(random() % 2);
        vm.cpu.threadPolicy = static_cast<ThreadPolicy>(random() % 3);
        vm.cpu.emulatorPolicy = static_cast<HelperThreadPolicy>(random() % 2);
        auto placed = ledger->apply(&Ledger::decideAdmitVm, vm);
        if (placed.ok()) vms.push_back(uuid);
        placed.ok() ? ++accepted : ++refused;
      } else if (action < 55 && !pods.empty()) {
        const std::string& uid = pods[random() % pods.size()];
        const auto snapshot = ledger->state();
        if (snapshot->pods.at(uid).spec.qos == QosClass::kGuaranteed && !snapshot->pods.at(uid).containers.empty()) {
          (void)ledger->apply(&Ledger::decideResizeContainer, uid, cpus("c", 1 + static_cast<int>(random() % 4)));
        }
      } else if (action < 60 && !vms.empty()) {
        const std::string& uuid = vms[random() % vms.size()];
        StatePtr now = ledger->state();
        VmSpec vm = now->vms.at(uuid).spec;
        vm.cpu.vcpus = 1 + static_cast<int>(random() % 4);
        vm.cpu.cpuPolicy = static_cast<VmCpuPolicy>(random() % 2);
        (void)ledger->apply(&Ledger::decideResizeVm, vm);
      } else if (action < 75 && !pods.empty()) {
        const size_t victim = random() % pods.size();
        ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, pods[victim], ReleaseGuard{}).ok());
        pods.erase(pods.begin() + static_cast<long>(victim));
      } else if (action < 95 && !vms.empty()) {
        const size_t victim = random() % vms.size();
        ASSERT_TRUE(ledger->apply(&Ledger::decideReleaseVm, vms[victim]).ok());
        vms.erase(vms.begin() + static_cast<long>(victim));
      } else if (action >= 99) {
        const auto before = ledger->state();
        ledger.reset();
        ledger = openLedger(tmp.sub("ledger.db"), topo, c);
        ASSERT_TRUE(ledger->loadProblems().empty()) << ledger->loadProblems().front();
        const StatePtr reopened = ledger->state();
        ASSERT_EQ(reopened->grants().size(), before->grants().size());
      }
      const StatePtr now = ledger->state();
      auto checked = checkLedgerInvariants(*now, *topo, c);
      ASSERT_TRUE(checked.ok()) << shape.topology << " op " << op << ": " << checked.error().message();
    }
    EXPECT_GT(accepted, 1000) << shape.topology;
    EXPECT_GT(refused, 100) << shape.topology;  // the pool's limits were reached
  }
}

// 16 threads admitting and releasing at once never see a CPU given twice.
TEST(LedgerTest, ConcurrentCallersNeverShareACpu) {
  testing::TempDir tmp;
  const auto topo = synthetic("pack:2 numa:2(memory=16GiB) core:8 pu:2");
  const LedgerConfig c = config(2);
  auto ledger = openLedger(tmp.sub("ledger.db"), topo, c);
  std::vector<std::atomic<int>> holder(64);
  for (auto& h : holder) h = -1;
  std::atomic<bool> clash{false};
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      for (int i = 0; i < 300; ++i) {
        const std::string uid = "t" + std::to_string(t) + "-" + std::to_string(i);
        ContainerSpec container = cpus("c", 1 + static_cast<int>(random() % 4));
        container.id = uid + "-c";  // runtime ids are unique on the node
        auto placed = ledger->apply(&Ledger::decideAdmitContainer, guaranteed(uid), container, kNoneFinished);
        if (!placed.ok()) continue;
        ++granted;
        for (int cpu : placed->exclusive) {
          int expected = -1;
          if (!holder[static_cast<size_t>(cpu)].compare_exchange_strong(expected, t)) clash = true;
        }
        std::this_thread::yield();
        for (int cpu : placed->exclusive) holder[static_cast<size_t>(cpu)] = -1;  // before the CPUs go back
        if (!ledger->apply(&Ledger::decideReleasePod, uid, ReleaseGuard{}).ok()) clash = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(clash.load());
  EXPECT_GT(granted.load(), 1000);
  expectInvariants(*ledger, c);
  const StatePtr now = ledger->state();
  EXPECT_TRUE(now->grants().empty());
}

TEST(LedgerTest, UserPinnedVmHoldsExactlyItsCpusAndSurvivesReopen) {
  testing::TempDir tmp;
  const auto topo = synthetic("pack:2 numa:2(memory=16GiB) core:4 pu:2");
  const LedgerConfig c = config();
  VmSpec pinned = dedicatedVm("8f0c1a52-0000-4000-8000-00000000000a", 2);
  pinned.cpu.cpuPolicy = VmCpuPolicy::kShared;
  pinned.cpu.pinnedVcpuCpus = {12, 13};
  {
    auto ledger = openLedger(tmp.sub("ledger.db"), topo, c);
    auto placement = ledger->apply(&Ledger::decideAdmitVm, pinned);
    ASSERT_TRUE(placement.ok()) << placement.error().message();
    EXPECT_EQ(placement->exclusive.format(), "12-13");
    EXPECT_EQ(placement->mems.format(), "1");  // memory follows the pinned CPUs' node
    // A second VM asking for one of them is refused, and nothing changes.
    const auto before = ledger->state();
    VmSpec other = dedicatedVm("8f0c1a52-0000-4000-8000-00000000000b", 1);
    other.cpu.pinnedVcpuCpus = {13};
    auto refused = ledger->apply(&Ledger::decideAdmitVm, other);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().message(), HasSubstr("names CPUs 13"));
    StatePtr now = ledger->state();
    EXPECT_EQ(now->shared(), before->shared());
    now = ledger->state();
    EXPECT_EQ(now->vms.size(), 1u);
    expectInvariants(*ledger, c);
  }
  auto reopened = openLedger(tmp.sub("ledger.db"), topo, c);
  ASSERT_TRUE(reopened->findVm(pinned.uuid).has_value());
  EXPECT_EQ(reopened->findVm(pinned.uuid)->spec.cpu.pinnedVcpuCpus, pinned.cpu.pinnedVcpuCpus);
  EXPECT_EQ(reopened->apply(&Ledger::decideAdmitVm, pinned)->exclusive.format(), "12-13");  // idempotent
  expectInvariants(*reopened, c);
}

}  // namespace
}  // namespace vri
