// The ledger's runtime ids on a real sqlite file: sandboxes bound to pods,
// releases guarded by the id kubelet names (a replaced container or sandbox
// is not the current one), undoing an admit, and finished containers handing
// their CPUs on — what the CRI shim relies on.
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

class LedgerRuntimeIdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 4 CPUs, 1 reserved: 3 for the shared pool and exclusive tenants.
    config_.pool.reserved.count = 1;
    config_.allocatableMemoryBytes = 8ULL << 30;
    reopen();
  }
  void reopen() {
    ledger_.reset();
    auto store = SqliteLedgerStore::open(tmp_.sub("ledger.db"), Durability::kNormal);
    ASSERT_TRUE(store.ok()) << store.error().message();
    auto topology = loadSyntheticTopology("pack:1 numa:1(memory=16GiB) core:4 pu:1");
    ASSERT_TRUE(topology.ok());
    auto ledger =
        Ledger::open(std::make_shared<const Topology>(std::move(topology).value()), config_, std::move(store).value());
    ASSERT_TRUE(ledger.ok()) << ledger.error().message();
    ledger_ = std::move(ledger).value();
  }
  void expectInvariants() {
    const StatePtr now = ledger_->state();
    auto checked = checkLedgerInvariants(*now, ledger_->topology(), config_);
    EXPECT_TRUE(checked.ok()) << checked.error().message();
  }
  static PodSpec pod(const std::string& uid, QosClass qos = QosClass::kGuaranteed) {
    return {uid, "default/" + uid, qos, 0, 0};
  }
  static ContainerSpec oneCpu(const std::string& name, const std::string& id = "") {
    return {name, id, false, 1000, 1000, 64ULL << 20, std::nullopt};
  }
  ContainerRecord record(const std::string& uid, const std::string& name) {
    const StatePtr now = ledger_->state();
    return now->pod(uid)->containers.at(name);
  }

  testing::TempDir tmp_;
  LedgerConfig config_;
  std::unique_ptr<Ledger> ledger_;
};

TEST_F(LedgerRuntimeIdsTest, ASandboxIsBoundToItsPodAndSurvivesARestart) {
  auto recorded = ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "");
  ASSERT_TRUE(recorded.ok()) << recorded.error().message();
  EXPECT_TRUE(*recorded);                                                      // new
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s1"));  // known: only bound
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s1"));  // idempotent
  StatePtr now = ledger_->state();
  EXPECT_EQ(now->pod("p1")->sandboxId, "s1");
  ASSERT_NE(now->runtimeOwner("s1"), nullptr);
  now = ledger_->state();
  EXPECT_TRUE(now->runtimeOwner("s1")->isSandbox());

  // One id names one thing; a pod keeps its QoS.
  EXPECT_EQ(ledger_->apply(&Ledger::decideBindSandbox, pod("p2"), "s1").error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(ledger_->apply(&Ledger::decideBindSandbox, pod("p1", QosClass::kBurstable), "s1").error().code(),
            ErrorCode::kFailedPrecondition);
  EXPECT_EQ(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "../s").error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app", "s1"), kNoneFinished).error().code(),
            ErrorCode::kFailedPrecondition);

  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app", "c1"), kNoneFinished).ok());
  reopen();
  now = ledger_->state();
  EXPECT_EQ(now->pod("p1")->sandboxId, "s1");
  now = ledger_->state();
  ASSERT_NE(now->runtimeOwner("c1"), nullptr);
  now = ledger_->state();
  EXPECT_EQ(now->runtimeOwner("c1")->container, "app");
  expectInvariants();
}

TEST_F(LedgerRuntimeIdsTest, ARecreatedContainerKeepsItsCpusAndTheDeadOnesRemovalIsANoOp) {
  ASSERT_TRUE(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s1").ok());
  auto first = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), kNoneFinished);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->placedNow);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app", "c1"), kNoneFinished)
                  .ok());  // bound once created

  // kubelet: the replacement first (same name, new id), then the dead one removed.
  auto again = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), kNoneFinished);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->placedNow);
  EXPECT_EQ(again->exclusive, first->exclusive);
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app", "c2"), kNoneFinished).ok());
  StatePtr now = ledger_->state();
  EXPECT_EQ(now->runtimeOwner("c1"), nullptr);

  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleaseContainer, "p1", "app", ReleaseGuard{"c1", false}));
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleaseContainer, "p1", "app", ReleaseGuard{"", true}));  // it is bound
  EXPECT_EQ(record("p1", "app").exclusive, first->exclusive);

  // The same for a sandbox: the new one bound, the old one's removal changes nothing.
  ASSERT_TRUE(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s2").ok());
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"s1", false}));
  EXPECT_EQ(record("p1", "app").exclusive, first->exclusive);

  // The current ids release; again is a no-op (kubelet retries).
  EXPECT_TRUE(*ledger_->apply(&Ledger::decideReleaseContainer, "p1", "app", ReleaseGuard{"c2", false}));
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleaseContainer, "p1", "app", ReleaseGuard{"c2", false}));
  EXPECT_TRUE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"s2", false}));
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"s2", false}));
  EXPECT_EQ(ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{}).error().code(),
            ErrorCode::kNotFound);  // unguarded: must exist
  const StatePtr emptied = ledger_->state();
  EXPECT_TRUE(emptied->grants().empty());
  now = ledger_->state();
  EXPECT_TRUE(now->runtimeIds.empty());
  expectInvariants();
}

TEST_F(LedgerRuntimeIdsTest, UndoingAnAdmitReleasesOnlyWhatIsStillUnbound) {
  ASSERT_TRUE(*ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), ""));
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), kNoneFinished).ok());
  // The sandbox was never bound, but the pod has a container now: kept.
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"", true}));
  EXPECT_TRUE(*ledger_->apply(&Ledger::decideReleaseContainer, "p1", "app", ReleaseGuard{"", true}));
  EXPECT_TRUE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"", true}));
  const StatePtr now = ledger_->state();
  EXPECT_EQ(now->pod("p1"), nullptr);
  EXPECT_FALSE(*ledger_->apply(&Ledger::decideReleasePod, "p1", ReleaseGuard{"", true}));
  expectInvariants();
}

TEST_F(LedgerRuntimeIdsTest, AFinishedContainerHandsItsCpuToTheNextAndIsPlacedAnewWhenItRunsAgain) {
  // Two of the three CPUs are taken: one is free.
  ASSERT_TRUE(ledger_
                  ->apply(&Ledger::decideAdmitContainer, pod("other"),
                          {"big", "", false, 2000, 2000, 64ULL << 20, std::nullopt}, kNoneFinished)
                  .ok());
  ASSERT_TRUE(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s1").ok());
  auto init = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("setup"), kNoneFinished);
  ASSERT_TRUE(init.ok()) << init.error().message();
  EXPECT_EQ(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), kNoneFinished).error().code(),
            ErrorCode::kResourceExhausted);

  auto app = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), {"setup"});
  ASSERT_TRUE(app.ok()) << app.error().message();
  EXPECT_EQ(app->exclusive, init->exclusive);
  EXPECT_TRUE(record("p1", "setup").exclusive.empty());
  expectInvariants();

  // The sandbox is re-created: the init container runs again first, with the app (of the old sandbox) finished.
  ASSERT_TRUE(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s2").ok());
  auto rerun = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("setup"), {"app"});
  ASSERT_TRUE(rerun.ok()) << rerun.error().message();
  EXPECT_TRUE(rerun->placedNow);
  EXPECT_EQ(rerun->exclusive, init->exclusive);
  auto app_again = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), {"setup"});
  ASSERT_TRUE(app_again.ok());
  EXPECT_EQ(app_again->exclusive, init->exclusive);

  // A finished container's CPUs the new one does not need go back to the shared pool.
  StatePtr now = ledger_->state();
  const CpuSet shared_before = now->shared();
  auto sidecar = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"),
                                {"log", "", false, 0, 0, std::nullopt, std::nullopt}, {"app"});
  ASSERT_TRUE(sidecar.ok());
  EXPECT_TRUE(sidecar->exclusive.empty());
  now = ledger_->state();
  EXPECT_EQ(now->shared(), shared_before | init->exclusive);
  expectInvariants();
}

// A container that handed its CPUs on asks nothing of the shared pool: the shim cannot tell an
// init container from another (CRI does not say), so it is known by having handed them on.
// (Found with a real kubelet: a finished init container's 1000m kept a Burstable pod out.)
TEST_F(LedgerRuntimeIdsTest, AContainerThatHandedItsCpusOnAsksNothingOfTheSharedPool) {
  ASSERT_TRUE(ledger_->apply(&Ledger::decideBindSandbox, pod("p1"), "s1").ok());
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("setup"), kNoneFinished)
                  .ok());  // not marked init: as the shim admits it
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("app"), {"setup"}).ok());
  StatePtr now = ledger_->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 0);
  EXPECT_EQ(now->totals.sharedTenants, 0);
  // The two CPUs left are the shared pool's whole: a Burstable pod may ask for all of them.
  auto burstable = ledger_->apply(&Ledger::decideAdmitContainer, pod("b1", QosClass::kBurstable),
                                  {"app", "", false, 2000, 0, std::nullopt, std::nullopt}, kNoneFinished);
  ASSERT_TRUE(burstable.ok()) << burstable.error().message();
  expectInvariants();
}

TEST_F(LedgerRuntimeIdsTest, ARefusedHandOffChangesNothing) {
  ASSERT_TRUE(ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"), oneCpu("setup"), kNoneFinished).ok());
  // A shared tenant keeps two CPUs (the reserved one among them) in the shared pool: 2 are left, not 3.
  ASSERT_TRUE(ledger_
                  ->apply(&Ledger::decideAdmitContainer, pod("b1", QosClass::kBurstable),
                          {"web", "", false, 1500, 0, {}, {}}, kNoneFinished)
                  .ok());
  const StatePtr before = ledger_->state();
  auto too_big = ledger_->apply(&Ledger::decideAdmitContainer, pod("p1"),
                                {"app", "", false, 3000, 3000, 64ULL << 20, std::nullopt}, {"setup"});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(ledger_->state(), before);
  EXPECT_FALSE(record("p1", "setup").exclusive.empty());
}

}  // namespace
}  // namespace vri
