// What a change of placement policy would do to each tenant, worked out on a copy of the books: the
// tenants it keeps stay, those it would not keep move where it places them, or break it when
// nothing can hold them; the ledger itself is left as it was.
#include "accounting/config_change_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1ULL << 30;

// Two nodes of 8 CPUs (4 cores x 2 threads): node 0 is CPUs 0-7, node 1 CPUs 8-15.
std::shared_ptr<const Topology> twoNodes() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 16 * kGiB, {}}, {1, 1, 16 * kGiB, {}}};
  for (int cpu = 0; cpu < 16; ++cpu) d.cpus.push_back({cpu, cpu / 2, cpu / 8, cpu / 8, -1});
  return std::make_shared<const Topology>(std::move(Topology::create(d)).value());
}

LedgerConfig config(const CpuSet& reserved, TopologyPolicy policy = TopologyPolicy::kNone) {
  LedgerConfig c;
  c.pool.reserved.cpus = reserved;
  c.allocatableMemoryBytes = 30 * kGiB;
  c.topologyManager.policy = policy;
  return c;
}

class ConfigChangePlanTest : public ::testing::Test {
 protected:
  void open(const LedgerConfig& c) {
    ledger_ = std::move(Ledger::open(topology_, c, std::make_unique<MemoryLedgerStore>())).value();
  }
  // A Guaranteed pod's one container on `cpus` whole CPUs.
  CpuSet admit(const std::string& uid, int cpus) {
    const PodSpec pod{uid, "default/" + uid, QosClass::kGuaranteed, 0, 0};
    const ContainerSpec app{"app", uid + "-app", false, cpus * 1000, cpus * 1000, kGiB, kGiB};
    auto placed = ledger_->apply(&Ledger::decideAdmitContainer, pod, app, std::vector<std::string>{});
    EXPECT_TRUE(placed.ok()) << placed.error().message();
    return placed.ok() ? placed->exclusive : CpuSet();
  }
  std::shared_ptr<const Topology> topology_ = twoNodes();
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(ConfigChangePlanTest, AReservationOverAContainersCpusMovesItAndKeepsTheRest) {
  open(config(CpuSet{0}));
  const CpuSet g = admit("g", 2);
  const CpuSet h = admit("h", 2);
  const StatePtr before = ledger_->state();
  auto plan = planConfigChange(*before, topology_, config(CpuSet{0} | g));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->reservedBefore, CpuSet{0});
  EXPECT_EQ(plan->reservedAfter, CpuSet{0} | g);
  EXPECT_EQ(plan->stays, 1);  // h
  ASSERT_EQ(plan->changes.size(), 1u);
  const TenantChange& moved = plan->changes[0];
  EXPECT_EQ(moved.verdict, TenantChange::Verdict::kMoves);
  EXPECT_EQ(moved.tenant, "pod/g/app");
  EXPECT_EQ(moved.name, "default/g app");
  EXPECT_EQ(moved.cpusBefore, g);
  EXPECT_EQ(moved.cpusAfter.count(), 2);
  EXPECT_FALSE(moved.cpusAfter.intersects(plan->reservedAfter | h)) << moved.cpusAfter.format();
  EXPECT_THAT(moved.reason, HasSubstr("do not fit the new policy's pools"));
  EXPECT_FALSE(plan->sharedAfter.intersects(moved.cpusAfter | h));
  // Worked out on a copy: the ledger holds what it held.
  const StatePtr after = ledger_->state();
  EXPECT_EQ(after.get(), before.get());
  EXPECT_EQ(after->pod("g")->containers.at("app").exclusive, g);
}

TEST_F(ConfigChangePlanTest, WhatNothingCanHoldUnderTheNewPolicyBreaksIt) {
  open(config(CpuSet{0}));
  admit("g", 4);
  admit("h", 4);
  // 13 CPUs reserved leave 3, of which the shared pool keeps one.
  const StatePtr now = ledger_->state();
  auto plan = planConfigChange(*now, topology_, config(CpuSet::range(0, 12)));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->stays, 0);
  ASSERT_EQ(plan->changes.size(), 2u);
  for (const TenantChange& change : plan->changes) {
    EXPECT_EQ(change.verdict, TenantChange::Verdict::kBreaks) << change.name;
    EXPECT_THAT(change.reason, HasSubstr("cannot be placed again")) << change.name;
  }
}

// none -> single-numa-node: a container that spans nodes moves onto one that can hold it, one that no
// node can hold breaks the new policy, and one on a single node stays.
TEST_F(ConfigChangePlanTest, SingleNumaNodeMovesWhatSpansNodesOrBreaksWhereNoNodeCanHoldIt) {
  open(config(CpuSet{0}));
  // Found running across both nodes (kubelet's static policy put it there) and adopted as it was.
  const PodSpec pod{"spans", "default/spans", QosClass::kGuaranteed, 0, 0};
  auto adopted = ledger_->apply(&Ledger::decideAdoptContainer, pod,
                                ContainerSpec{"app", "spans-app", false, 2000, 2000, kGiB, kGiB}, CpuSet{7, 15},
                                std::vector<int>{});
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  admit("wide", 10);  // more than a node's 8: spans both
  const CpuSet narrow = admit("narrow", 2);
  const StatePtr now = ledger_->state();
  auto plan = planConfigChange(*now, topology_, config(CpuSet{0}, TopologyPolicy::kSingleNumaNode));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->stays, 1);
  ASSERT_EQ(plan->changes.size(), 2u);
  const TenantChange& wide = plan->changes[0].name == "default/wide app" ? plan->changes[0] : plan->changes[1];
  const TenantChange& spans = plan->changes[0].name == "default/spans app" ? plan->changes[0] : plan->changes[1];
  EXPECT_EQ(wide.verdict, TenantChange::Verdict::kBreaks);
  EXPECT_THAT(wide.reason, HasSubstr("it spans NUMA nodes 0,1, and single-numa-node wants one"));
  EXPECT_THAT(wide.reason, HasSubstr("cannot be placed again"));
  EXPECT_EQ(spans.verdict, TenantChange::Verdict::kMoves);
  EXPECT_EQ(spans.cpusBefore, (CpuSet{7, 15}));
  EXPECT_EQ(spans.cpusAfter.count(), 2);
  const bool oneNode =
      spans.cpusAfter.isSubsetOf(CpuSet::range(0, 7)) || spans.cpusAfter.isSubsetOf(CpuSet::range(8, 15));
  EXPECT_TRUE(oneNode) << spans.cpusAfter.format();
  EXPECT_EQ(now->pod("narrow")->containers.at("app").exclusive, narrow);
}

}  // namespace
}  // namespace vri
