// Pods' hugepages in the same per-NUMA, per-size books as VMs': a container's hugepage limits
// (CRI's, limit 0 meaning none) are admitted against the node's free pages of each size, on the
// NUMA nodes its CPUs come from, under each topology-manager policy; a refusal changes nothing, a
// release gives the pages back, and they are kept across a reopening of the ledger.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t k2M = 2 * kMiB;

// Two nodes of 8 CPUs: node 0 with 512 2 MiB pages (1 GiB), node 1 with 256 (512 MiB) and four 1 GiB pages.
std::shared_ptr<const Topology> twoNodes() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 16 * kGiB, {{k2M, 512}}}, {1, 1, 16 * kGiB, {{k2M, 256}, {kGiB, 4}}}};
  for (int cpu = 0; cpu < 16; ++cpu) d.cpus.push_back({cpu, cpu / 2, cpu / 8, cpu / 8, -1});
  return std::make_shared<const Topology>(std::move(Topology::create(d)).value());
}

LedgerConfig config(TopologyPolicy policy) {
  LedgerConfig c;
  c.allocatableMemoryBytes = 30 * kGiB;
  c.topologyManager.policy = policy;
  return c;
}

std::unique_ptr<Ledger> openLedger(const std::string& file, const LedgerConfig& c) {
  auto store = SqliteLedgerStore::open(file, Durability::kNormal);
  EXPECT_TRUE(store.ok()) << store.error().message();
  auto ledger = Ledger::open(twoNodes(), c, std::move(store).value());
  EXPECT_TRUE(ledger.ok()) << ledger.error().message();
  return std::move(ledger).value();
}

PodSpec pod(const std::string& uid, QosClass qos = QosClass::kGuaranteed) { return {uid, "ns/" + uid, qos, 0, 0}; }

// A container as kubelet sends it: one limit for every page size the host has, 0 for those not asked for.
ContainerSpec container(const std::string& name, int64_t milliCpu, uint64_t pages2M, uint64_t pages1G = 0) {
  ContainerSpec c{name, name + "-id", false, milliCpu, milliCpu, kGiB, std::nullopt};
  c.hugepageLimits = {{k2M, pages2M * k2M}, {kGiB, pages1G * kGiB}};
  return c;
}

CpuSet nodeCpus(int node) { return CpuSet::range(node * 8, node * 8 + 7); }

uint64_t freeOf(const Ledger& ledger, int node, uint64_t pageSize) {
  const StatePtr now = ledger.state();
  return now->numa.cell(node, pageSize).free() / pageSize;
}
uint64_t free2M(const Ledger& ledger, int node) { return freeOf(ledger, node, k2M); }

bool invariantsHold(const Ledger& ledger, const LedgerConfig& c) {
  const StatePtr now = ledger.state();
  return checkLedgerInvariants(*now, ledger.topology(), c).ok();
}

TEST(LedgerPodHugepagesTest, AGuaranteedPodsPagesComeWithItsCpusFromTheNodeThatHasThem) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("l.db"), config(TopologyPolicy::kSingleNumaNode));
  // 1 GiB pages only node 1 has: its CPUs and its pages there.
  auto placed = ledger->apply(&Ledger::decideAdmitContainer, pod("p1"), container("dpdk", 2000, 0, 2), kNoneFinished);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_TRUE(placed->exclusive.isSubsetOf(nodeCpus(1))) << placed->exclusive.format();
  EXPECT_EQ(placed->mems.format(), "1");
  EXPECT_EQ(freeOf(*ledger, 1, kGiB), 2u);
  // 300 2 MiB pages: node 0 has 512, node 1 only 256.
  placed = ledger->apply(&Ledger::decideAdmitContainer, pod("p2"), container("app", 1000, 300), kNoneFinished);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_TRUE(placed->exclusive.isSubsetOf(nodeCpus(0)));
  EXPECT_EQ(placed->mems.format(), "0");
  EXPECT_EQ(free2M(*ledger, 0), 212u);
  EXPECT_TRUE(invariantsHold(*ledger, config(TopologyPolicy::kSingleNumaNode)));
}

TEST(LedgerPodHugepagesTest, PodsAndVmsDrawOnTheSameBooksAndARefusalChangesNothing) {
  testing::TempDir tmp;
  const LedgerConfig c = config(TopologyPolicy::kNone);
  auto ledger = openLedger(tmp.sub("l.db"), c);
  ASSERT_TRUE(
      ledger->apply(&Ledger::decideAdmitContainer, pod("p1"), container("dpdk", 1000, 0, 3), kNoneFinished).ok());
  // A VM backed by 1 GiB pages asks for two: one is left.
  VmSpec vm;
  vm.uuid = "11111111-0000-4000-8000-000000000001";
  vm.cpu.name = "nfv";
  vm.cpu.vcpus = 1;
  vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
  vm.memoryBytes = 2 * kGiB;
  vm.hugepageSize = kGiB;
  const StatePtr before = ledger->state();
  auto refused = ledger->apply(&Ledger::decideAdmitVm, vm);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("hugepages-1Gi"));
  EXPECT_EQ(ledger->state(), before);  // nothing published
  // A pod asking for more 2 MiB pages than any node, or all of them, has: refused, nothing changed.
  auto wide = ledger->apply(&Ledger::decideAdmitContainer, pod("p2"), container("big", 1000, 800), kNoneFinished);
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(wide.error().message(), HasSubstr("hugepages-2Mi"));
  EXPECT_EQ(ledger->state(), before);
  // The pod released, its pages are back and the VM fits.
  ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{}).ok());
  EXPECT_EQ(freeOf(*ledger, 1, kGiB), 4u);
  auto admitted = ledger->apply(&Ledger::decideAdmitVm, vm);
  ASSERT_TRUE(admitted.ok()) << admitted.error().message();
  EXPECT_TRUE(invariantsHold(*ledger, c));
}

TEST(LedgerPodHugepagesTest, LimitZeroAdmitsNoPagesAndASharedContainersPagesBindItsMemory) {
  testing::TempDir tmp;
  auto ledger = openLedger(tmp.sub("l.db"), config(TopologyPolicy::kNone));
  // Every size at 0, as kubelet sends a container that asks for none: no pages, no bound memory.
  auto none = ledger->apply(&Ledger::decideAdmitContainer, pod("p1", QosClass::kBurstable), container("web", 0, 0, 0),
                            kNoneFinished);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_TRUE(none->mems.empty());
  EXPECT_EQ(free2M(*ledger, 0) + free2M(*ledger, 1), 768u);
  // A Burstable container on the shared pool with 100 pages: counted, and its memory bound where they are.
  ContainerSpec shared = container("cache", 0, 100);
  shared.cpuLimitMilli = 0;
  auto placed = ledger->apply(&Ledger::decideAdmitContainer, pod("p2", QosClass::kBurstable), shared, kNoneFinished);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_TRUE(placed->exclusive.empty());
  EXPECT_EQ(placed->mems.format(), "0");
  EXPECT_EQ(free2M(*ledger, 0), 412u);
  // A resize may not change its pages.
  ContainerSpec more = shared;
  more.hugepageLimits[k2M] = 200 * k2M;
  auto resized = ledger->apply(&Ledger::decideResizeContainer, "p2", more);
  ASSERT_FALSE(resized.ok());
  EXPECT_THAT(resized.error().message(), HasSubstr("hugepages are not resized in place"));
  // Pages that are not whole, or of no page size, are refused as malformed.
  ContainerSpec odd = container("odd", 0, 0);
  odd.hugepageLimits[k2M] = k2M + 1;
  EXPECT_THAT(ledger->apply(&Ledger::decideAdmitContainer, pod("p3", QosClass::kBurstable), odd, kNoneFinished)
                  .error()
                  .message(),
              HasSubstr("not a whole number of pages"));
  odd.hugepageLimits = {{3 * kMiB, 3 * kMiB}};
  EXPECT_THAT(ledger->apply(&Ledger::decideAdmitContainer, pod("p3", QosClass::kBurstable), odd, kNoneFinished)
                  .error()
                  .message(),
              HasSubstr("not a page size"));
}

TEST(LedgerPodHugepagesTest, ThePodScopeAlignsEveryContainersPagesAndTheLedgerKeepsThemAcrossAReopening) {
  testing::TempDir tmp;
  LedgerConfig c = config(TopologyPolicy::kSingleNumaNode);
  {
    auto ledger = openLedger(tmp.sub("l.db"), c);
    // Two containers of 200 pages each: 400 fit node 0 only.
    auto placed = ledger->apply(&Ledger::decideAdmitPod, pod("p1"),
                                std::vector<ContainerSpec>{container("a", 1000, 200), container("b", 1000, 200)});
    ASSERT_TRUE(placed.ok()) << placed.error().message();
    for (const ContainerPlacement& p : *placed) {
      EXPECT_EQ(p.mems.format(), "0");
      EXPECT_TRUE(p.exclusive.isSubsetOf(nodeCpus(0)));
    }
    // Another 2 x 200: neither node has 400 left, and the policy keeps a pod on one node.
    const StatePtr before = ledger->state();
    auto refused = ledger->apply(&Ledger::decideAdmitPod, pod("p2"),
                                 std::vector<ContainerSpec>{container("a", 1000, 200), container("b", 1000, 200)});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(ledger->state(), before);
  }
  auto reopened = openLedger(tmp.sub("l.db"), c);
  EXPECT_EQ(free2M(*reopened, 0), 112u);
  const StatePtr now = reopened->state();
  EXPECT_EQ(now->pods.at("p1").containers.at("a").spec.hugepageLimits.at(k2M), 200 * k2M);
  ASSERT_TRUE(reopened->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{}).ok());
  EXPECT_EQ(free2M(*reopened, 0), 512u);
}

// A running container adopted (a restart of the shim, --init-ledger) takes its pages from the books as an
// admission does: on its CPUs' node, or where they fit for a shared one; pages the books cannot hold refuse it.
TEST(LedgerPodHugepagesTest, AnAdoptedContainerTakesItsPagesOnItsCpusNode) {
  testing::TempDir tmp;
  const LedgerConfig c = config(TopologyPolicy::kNone);
  auto ledger = openLedger(tmp.sub("l.db"), c);
  ASSERT_TRUE(ledger
                  ->apply(&Ledger::decideAdoptContainer, pod("p1"), container("dpdk", 2000, 100), CpuSet{9, 10},
                          std::vector<int>{})
                  .ok());
  EXPECT_EQ(free2M(*ledger, 1), 156u);
  EXPECT_EQ(free2M(*ledger, 0), 512u);
  ContainerSpec shared = container("side", 0, 10);
  shared.cpuLimitMilli = 0;
  ASSERT_TRUE(
      ledger
          ->apply(&Ledger::decideAdoptContainer, pod("p2", QosClass::kBurstable), shared, CpuSet(), std::vector<int>{})
          .ok());
  EXPECT_EQ(free2M(*ledger, 0) + free2M(*ledger, 1), 512u + 156u - 10u);
  const StatePtr before = ledger->state();
  auto refused = ledger->apply(&Ledger::decideAdoptContainer, pod("p3"), container("big", 1000, 200), CpuSet{12},
                               std::vector<int>{});
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("not adopted"));
  EXPECT_THAT(refused.error().message(), HasSubstr("pods 200 MiB"));
  const StatePtr after = ledger->state();
  EXPECT_EQ(after->pool.shared(), before->pool.shared()) << "its CPU stays in the pool";
  EXPECT_EQ(after->pod("p3"), nullptr);
  EXPECT_TRUE(invariantsHold(*ledger, c));
}

// Pods and VMs competing for one node's 2 MiB and 1 GiB pages under each policy. A VM takes 400 of node 0's
// 512 2 MiB pages and three of node 1's four 1 GiB pages. A pod's 200 pages fit node 1 only: its CPUs go
// with them whatever the policy. The next 150 fit no single node: `single-numa-node` and `restricted`
// refuse, `best-effort` and `none` take them from both nodes and bind the container to both. Two 1 GiB
// pages exist nowhere any more: refused under every policy, and nothing changes.
class LedgerPodHugepagesPolicyTest : public ::testing::TestWithParam<TopologyPolicy> {};

TEST_P(LedgerPodHugepagesPolicyTest, PodsAndVmsCompeteForOneNodesPages) {
  testing::TempDir tmp;
  const LedgerConfig c = config(GetParam());
  auto ledger = openLedger(tmp.sub("l.db"), c);
  VmSpec vm;
  vm.uuid = "11111111-0000-4000-8000-000000000001";
  vm.cpu.name = "vm2m";
  vm.cpu.vcpus = 1;
  vm.cpu.cpuPolicy = VmCpuPolicy::kShared;
  vm.memoryBytes = 400 * k2M;
  vm.hugepageSize = k2M;
  vm.strictNumaNodes = {0};
  ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitVm, vm).ok());
  vm.uuid = "11111111-0000-4000-8000-000000000002";
  vm.cpu.name = "vm1g";
  vm.memoryBytes = 3 * kGiB;
  vm.hugepageSize = kGiB;
  vm.strictNumaNodes = {1};
  ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitVm, vm).ok());

  auto first = ledger->apply(&Ledger::decideAdmitContainer, pod("p1"), container("a", 2000, 200), kNoneFinished);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_TRUE(first->exclusive.isSubsetOf(nodeCpus(1))) << first->exclusive.format();
  EXPECT_EQ(first->mems.format(), "1");
  EXPECT_EQ(free2M(*ledger, 1), 56u);

  const StatePtr before = ledger->state();
  auto second = ledger->apply(&Ledger::decideAdmitContainer, pod("p2"), container("b", 1000, 150), kNoneFinished);
  const bool strict = GetParam() == TopologyPolicy::kSingleNumaNode || GetParam() == TopologyPolicy::kRestricted;
  if (strict) {
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(ledger->state(), before) << "a refusal changes nothing";
  } else {
    ASSERT_TRUE(second.ok()) << second.error().message();
    EXPECT_EQ(second->mems.format(), "0-1");
    EXPECT_EQ(free2M(*ledger, 0) + free2M(*ledger, 1), 112u + 56u - 150u);
  }
  const StatePtr before_1g = ledger->state();
  auto big = ledger->apply(&Ledger::decideAdmitContainer, pod("p3"), container("c", 1000, 0, 2), kNoneFinished);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.error().message(), HasSubstr("hugepages-1Gi"));
  EXPECT_EQ(ledger->state(), before_1g);
  // Released, the pod's pages are back where they came from.
  ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{}).ok());
  if (!strict) {
    ASSERT_TRUE(ledger->apply(&Ledger::decideReleasePod, "p2", ReleaseGuard{}).ok());
  }
  EXPECT_EQ(free2M(*ledger, 0), 112u);
  EXPECT_EQ(free2M(*ledger, 1), 256u);
  EXPECT_TRUE(invariantsHold(*ledger, c));
}

INSTANTIATE_TEST_SUITE_P(Policies, LedgerPodHugepagesPolicyTest,
                         ::testing::Values(TopologyPolicy::kNone, TopologyPolicy::kBestEffort,
                                           TopologyPolicy::kRestricted, TopologyPolicy::kSingleNumaNode),
                         [](const ::testing::TestParamInfo<TopologyPolicy>& info) {
                           switch (info.param) {
                             case TopologyPolicy::kNone: return std::string("None");
                             case TopologyPolicy::kBestEffort: return std::string("BestEffort");
                             case TopologyPolicy::kRestricted: return std::string("Restricted");
                             case TopologyPolicy::kSingleNumaNode: return std::string("SingleNumaNode");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace vri
