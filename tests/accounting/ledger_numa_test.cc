// The ledger's NUMA memory: pinned Guaranteed containers, hugepage-backed and
// numatune VMs, topology-manager policies, persistence and invariants.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "accounting/ledger.h"
#include "accounting/ledger_validation.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1ULL << 30;

// Two nodes of 8 CPUs (4 cores x 2 threads): node 0 with 16 GiB, node 1 with 32 GiB of which four 1 GiB pages.
std::shared_ptr<const Topology> twoNodes() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 16 * kGiB, {}}, {1, 1, 32 * kGiB, {{kGiB, 4}}}};
  for (int cpu = 0; cpu < 16; ++cpu) d.cpus.push_back({cpu, cpu / 2, cpu / 8, cpu / 8, -1});
  return std::make_shared<const Topology>(std::move(Topology::create(d)).value());
}

LedgerConfig numaConfig(TopologyPolicy policy = TopologyPolicy::kNone) {
  LedgerConfig c;
  c.allocatableMemoryBytes = 44 * kGiB;
  c.pinGuaranteedMemory = true;
  c.topologyManager.policy = policy;
  c.reservedMemoryPerNode = {{0, kGiB}, {1, kGiB}};
  c.reservedMemoryTotal = 2 * kGiB;
  return c;
}

std::unique_ptr<Ledger> openLedger(const std::string& file, const LedgerConfig& c) {
  auto store = SqliteLedgerStore::open(file, Durability::kNormal);
  EXPECT_TRUE(store.ok()) << store.error().message();
  auto ledger = Ledger::open(twoNodes(), c, std::move(store).value());
  EXPECT_TRUE(ledger.ok()) << ledger.error().message();
  return std::move(ledger).value();
}

// The start-up check against an empty node releases everything but reservations.
bool validateLedgerVmsKept(Ledger& ledger) {
  const ValidationReport report = validateLedger(ledger, NodeScan{});
  const StatePtr now = ledger.state();
  return report.released.empty() && report.adopted.empty() && now->vms.size() == 1;
}

VmSpec hugepageVm(const std::string& uuid, int vcpus, uint64_t gib) {
  VmSpec vm;
  vm.uuid = uuid;
  vm.cpu.name = "db01";
  vm.cpu.vcpus = vcpus;
  vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
  vm.memoryBytes = gib * kGiB;
  vm.hugepageSize = kGiB;
  return vm;
}

CpuSet nodeCpus(int node) { return CpuSet::range(node * 8, node * 8 + 7); }

TEST(LedgerNumaTest, HugepageVmTakesCpusAndPagesFromTheNodeThatHasThem) {
  testing::TempDir tmp;
  const LedgerConfig c = numaConfig();
  auto ledger = openLedger(tmp.sub("l.db"), c);
  auto vm = ledger->apply(&Ledger::decideAdmitVm, hugepageVm("11111111-0000-4000-8000-000000000001", 2, 2));
  ASSERT_TRUE(vm.ok()) << vm.error().message();
  EXPECT_EQ(vm->mems.format(), "1");
  EXPECT_TRUE(vm->exclusive.isSubsetOf(nodeCpus(1)));
  const auto before = ledger->state();
  auto refused = ledger->apply(&Ledger::decideAdmitVm, hugepageVm("11111111-0000-4000-8000-000000000002", 1, 3));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              HasSubstr("needs 3072 MiB of hugepages-1Gi on NUMA node(s) 0,1; 2048 MiB are free there"));
  StatePtr now = ledger->state();
  EXPECT_EQ(now->grants().size(), before->grants().size());
  now = ledger->state();
  EXPECT_EQ(now->numa.cell(1, kGiB).free(), 2 * kGiB);
  // numatune strict on node 0, which has no 1 GiB pages at all.
  VmSpec strict = hugepageVm("11111111-0000-4000-8000-000000000003", 1, 1);
  strict.strictNumaNodes = {0};
  EXPECT_THAT(ledger->apply(&Ledger::decideAdmitVm, strict).error().message(),
              HasSubstr("its numatune nodes 0 cannot provide 1024 MiB of hugepages-1Gi; 0 MiB are free there"));
  now = ledger->state();
  ASSERT_TRUE(checkLedgerInvariants(*now, ledger->topology(), c).ok());
  ASSERT_TRUE(ledger->apply(&Ledger::decideReleaseVm, "11111111-0000-4000-8000-000000000001").ok());
  now = ledger->state();
  EXPECT_EQ(now->numa.cell(1, kGiB).free(), 4 * kGiB);
}

TEST(LedgerNumaTest, PinnedContainersKeepCpusAndMemoryTogetherAcrossRestarts) {
  testing::TempDir tmp;
  const LedgerConfig c = numaConfig(TopologyPolicy::kSingleNumaNode);
  CpuSet mems;
  {
    auto ledger = openLedger(tmp.sub("l.db"), c);
    auto app = ledger->apply(&Ledger::decideAdmitContainer, {"p1", "ns/p1", QosClass::kGuaranteed, 0, 0},
                             {"app", "a1", false, 4000, 4000, 20 * kGiB, std::nullopt}, kNoneFinished);
    ASSERT_TRUE(app.ok()) << app.error().message();
    EXPECT_EQ(app->mems.format(), "1");  // only node 1 has 20 GiB
    EXPECT_TRUE(app->exclusive.isSubsetOf(nodeCpus(1)));
    mems = app->mems;
    // single-numa-node: 10 CPUs fit no node.
    auto wide = ledger->apply(&Ledger::decideAdmitContainer, {"p2", "ns/p2", QosClass::kGuaranteed, 0, 0},
                              {"app", "b1", false, 10000, 10000, kGiB, std::nullopt}, kNoneFinished);
    ASSERT_FALSE(wide.ok());
    EXPECT_THAT(wide.error().message(), HasSubstr("needs 10 CPUs and 1 GiB on one NUMA node"));
  }
  auto reopened = openLedger(tmp.sub("l.db"), c);
  const auto s = reopened->state();
  EXPECT_EQ(NumaMemory::mems(s->pods.at("p1").containers.at("app").memory), mems);
  EXPECT_EQ(s->numa.cell(1, kRegularMemory).assigned, 20 * kGiB);
  ASSERT_TRUE(checkLedgerInvariants(*s, reopened->topology(), c).ok());
}

TEST(LedgerNumaTest, PodScopeAlignsTheWholePodAllOrNothing) {
  testing::TempDir tmp;
  LedgerConfig c = numaConfig(TopologyPolicy::kSingleNumaNode);
  c.pinGuaranteedMemory = false;
  auto ledger = openLedger(tmp.sub("l.db"), c);
  const PodSpec pod{"p1", "ns/p1", QosClass::kGuaranteed, 0, 0};
  const std::vector<ContainerSpec> two_threes = {{"a", "a1", false, 3000, 3000, kGiB, std::nullopt},
                                                 {"b", "b1", false, 3000, 3000, kGiB, std::nullopt}};
  auto placed = ledger->apply(&Ledger::decideAdmitPod, pod, two_threes);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  ASSERT_EQ(placed->size(), 2u);
  const int node = ledger->topology().cpu((*placed)[0].exclusive.first())->numaNode;
  for (const auto& p : *placed) EXPECT_TRUE(p.exclusive.isSubsetOf(nodeCpus(node)));
  // 2 x 5 CPUs fit one node each, but not one node together: refused, nothing admitted.
  const PodSpec big{"p2", "ns/p2", QosClass::kGuaranteed, 0, 0};
  const std::vector<ContainerSpec> two_fives = {{"a", "a2", false, 5000, 5000, kGiB, std::nullopt},
                                                {"b", "b2", false, 5000, 5000, kGiB, std::nullopt}};
  auto refused = ledger->apply(&Ledger::decideAdmitPod, big, two_fives);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("pod ns/p2 needs 10 CPUs on one NUMA node"));
  StatePtr now = ledger->state();
  EXPECT_FALSE(now->pods.count("p2"));
  now = ledger->state();
  ASSERT_TRUE(checkLedgerInvariants(*now, ledger->topology(), c).ok());
}

TEST(LedgerNumaTest, DefineTimeReservationIsKeptUntilTheVmStarts) {
  testing::TempDir tmp;
  const LedgerConfig c = numaConfig();
  auto ledger = openLedger(tmp.sub("l.db"), c);
  const VmSpec vm = hugepageVm("22222222-0000-4000-8000-000000000001", 2, 2);
  auto reserved = ledger->apply(&Ledger::decideReserveVm, vm);
  ASSERT_TRUE(reserved.ok()) << reserved.error().message();
  EXPECT_EQ(reserved->mems.format(), "1");
  StatePtr now = ledger->state();
  EXPECT_TRUE(now->vms.at(vm.uuid).defined);
  // Not running yet: the start-up check keeps it, across a restart too.
  EXPECT_TRUE(validateLedgerVmsKept(*ledger));
  ledger.reset();
  ledger = openLedger(tmp.sub("l.db"), c);
  now = ledger->state();
  EXPECT_TRUE(now->vms.at(vm.uuid).defined);
  // It starts on exactly the reserved placement.
  auto started = ledger->apply(&Ledger::decideAdmitVm, vm);
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(started->exclusive, reserved->exclusive);
  EXPECT_EQ(started->mems, reserved->mems);
  now = ledger->state();
  EXPECT_FALSE(now->vms.at(vm.uuid).defined);
  now = ledger->state();
  ASSERT_TRUE(checkLedgerInvariants(*now, ledger->topology(), c).ok());
}

// A node of four CPUs in two NUMA nodes, as the cgroup v2 guest has it: CPU 0 reserved, one
// Guaranteed container on one CPU, then a VM with one dedicated vCPU and ordinary memory. Wherever
// the container sits, the VM's memory is bound to the node of its CPU: libvirt starts QEMU with
// the CPUs of a strict memory nodeset as its affinity, and fails the start when none of them is
// the VM's.
TEST(LedgerNumaTest, DedicatedVmMemoryFollowsItsCpusWhenTheFirstNodeIsFull) {
  constexpr uint64_t kMiB = 1ULL << 20;
  TopologyDescription d;
  d.numaNodes = {{0, 0, 3 * kGiB, {{2 * kMiB, 32}}}, {1, 0, 3 * kGiB, {{2 * kMiB, 32}}}};
  for (int cpu = 0; cpu < 4; ++cpu) d.cpus.push_back({cpu, cpu, 0, cpu / 2, -1});
  const auto topology = std::make_shared<const Topology>(std::move(Topology::create(d)).value());
  for (int pinned = 0; pinned <= 3; ++pinned) {  // 0: nothing held (CPU 0 is reserved)
    SCOPED_TRACE("CPU " + std::to_string(pinned) + " held");
    testing::TempDir tmp;
    LedgerConfig c;
    c.pool.reserved.count = 1;
    c.allocatableMemoryBytes = 5 * kGiB;
    auto store = SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal);
    ASSERT_TRUE(store.ok()) << store.error().message();
    auto opened = Ledger::open(topology, c, std::move(store).value());
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    auto ledger = std::move(opened).value();
    // A Guaranteed container holds one CPU; where it did not land on `pinned`, a VM pinned there
    // holds that CPU instead.
    ASSERT_TRUE(ledger
                    ->apply(&Ledger::decideAdmitContainer, {"c", "ns/c", QosClass::kGuaranteed, 0, 0},
                            {"app", "c1", false, 1000, 1000, 64 * kMiB, std::nullopt}, kNoneFinished)
                    .ok());
    StatePtr now = ledger->state();
    const CpuSet first = now->pool.grants().begin()->second.cpus;
    if (pinned == 0) {
      ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, "c", ReleaseGuard{}).ok());
    } else if (first != CpuSet{pinned}) {
      ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, "c", ReleaseGuard{}).ok());
      VmSpec holder;  // a pinned VM holds the CPU instead
      holder.uuid = "33333333-0000-4000-8000-000000000009";
      holder.cpu.name = "holder";
      holder.cpu.vcpus = 1;
      holder.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
      holder.cpu.pinnedVcpuCpus = {pinned};
      holder.memoryBytes = 64 * kMiB;
      auto held = ledger->apply(&Ledger::decideAdmitVm, holder);
      ASSERT_TRUE(held.ok()) << held.error().message();
    }
    VmSpec vm;
    vm.uuid = "33333333-0000-4000-8000-000000000001";
    vm.cpu.name = "churn-vm";
    vm.cpu.vcpus = 1;
    vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
    vm.memoryBytes = 64 * kMiB;
    auto placed = ledger->apply(&Ledger::decideAdmitVm, vm);
    ASSERT_TRUE(placed.ok()) << placed.error().message();
    ASSERT_EQ(placed->exclusive.count(), 1);
    const int node = topology->cpu(placed->exclusive.first())->numaNode;
    EXPECT_EQ(placed->mems, CpuSet{node}) << "CPU " << placed->exclusive.format();
    now = ledger->state();
    ASSERT_TRUE(checkLedgerInvariants(*now, ledger->topology(), c).ok());
  }
}

// Random pinned containers and NUMA-bound VMs: no node is over-committed in any resource.
TEST(LedgerNumaTest, NoNodeIsOvercommittedUnderRandomOperations) {
  testing::TempDir tmp;
  for (TopologyPolicy policy : {TopologyPolicy::kNone, TopologyPolicy::kRestricted}) {
    const LedgerConfig c = numaConfig(policy);
    auto ledger = openLedger(tmp.sub(policy == TopologyPolicy::kNone ? "a.db" : "b.db"), c);
    std::mt19937 random(31);
    std::vector<std::string> pods, vms;
    int placed = 0;
    for (int op = 0; op < 6000; ++op) {
      const int action = static_cast<int>(random() % 10);
      if (action < 3) {
        const std::string uid = "p" + std::to_string(op);
        const int cpus = 1 + static_cast<int>(random() % 4);
        if (ledger
                ->apply(&Ledger::decideAdmitContainer, {uid, uid, QosClass::kGuaranteed, 0, 0},
                        {"c", "c1", false, cpus * 1000, cpus * 1000, (1 + random() % 6) * kGiB, std::nullopt},
                        kNoneFinished)
                .ok()) {
          pods.push_back(uid);
          ++placed;
        }
      } else if (action < 5) {
        char uuid[40];
        std::snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012d", op);
        VmSpec vm = hugepageVm(uuid, 1 + static_cast<int>(random() % 3), 1 + random() % 2);
        if (random() % 2) vm.hugepageSize = 0;  // regular memory, still NUMA-bound by its dedicated vCPUs
        if (ledger->apply(&Ledger::decideAdmitVm, vm).ok()) {
          vms.push_back(uuid);
          ++placed;
        }
      } else if (action < 8 && !pods.empty()) {
        const size_t victim = random() % pods.size();
        ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, pods[victim], ReleaseGuard{}).ok());
        pods.erase(pods.begin() + static_cast<long>(victim));
      } else if (!vms.empty()) {
        const size_t victim = random() % vms.size();
        ASSERT_TRUE(ledger->apply(&Ledger::decideReleaseVm, vms[victim]).ok());
        vms.erase(vms.begin() + static_cast<long>(victim));
      }
      const StatePtr now = ledger->state();
      auto checked = checkLedgerInvariants(*now, ledger->topology(), c);
      ASSERT_TRUE(checked.ok()) << "op " << op << ": " << checked.error().message();
    }
    EXPECT_GT(placed, 500);
  }
}

}  // namespace
}  // namespace vri
