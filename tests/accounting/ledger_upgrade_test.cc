// A ledger written before VM placements named vCPU and iothread ids loads
// unchanged: its vCPUs are 0…n−1 and its iothreads 1…n, the same requests
// stated with explicit ids are the same VMs, and new decisions are stored in
// the new form beside the old records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "accounting/hwloc_topology.h"
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr char kWeb[] = "11111111-0000-4000-8000-000000000001";
constexpr char kPinned[] = "11111111-0000-4000-8000-000000000002";
constexpr char kDb[] = "11111111-0000-4000-8000-000000000003";

class LedgerUpgradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = tmp_.sub("ledger.sqlite");
    std::filesystem::copy_file(std::string(VRI_TEST_DATA_DIR) + "/ledgers/positional-vcpus.sqlite", path_);
    topology_ = std::make_shared<const Topology>(*loadSyntheticTopology("pack:1 numa:2(memory=8GiB) core:4 pu:2"));
    config_.pool.reserved.count = 1;
    config_.allocatableMemoryBytes = 12ULL << 30;
  }
  std::unique_ptr<Ledger> open() {
    auto store = SqliteLedgerStore::open(path_, Durability::kFull);
    EXPECT_TRUE(store.ok()) << store.error().message();
    auto ledger = Ledger::open(topology_, config_, std::move(*store));
    EXPECT_TRUE(ledger.ok()) << ledger.error().message();
    return ledger.ok() ? std::move(*ledger) : nullptr;
  }

  testing::TempDir tmp_;
  std::string path_;
  std::shared_ptr<const Topology> topology_;
  LedgerConfig config_;
};

TEST_F(LedgerUpgradeTest, PositionalPlacementsLoadAsIds) {
  auto ledger = open();
  ASSERT_TRUE(ledger);
  const StatePtr s = ledger->state();
  const VmRecord& web = *s->vm(kWeb);
  EXPECT_THAT(web.placement.vcpuCpus, ElementsAre(Pair(0, -1), Pair(1, 2), Pair(2, -1), Pair(3, 3)));
  EXPECT_THAT(web.placement.iothreadCpus, ElementsAre(Pair(1, 4), Pair(2, 5)));
  EXPECT_THAT(onlineVcpuIds(web.spec.cpu), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(vcpuIdCount(web.spec.cpu), 4);
  EXPECT_THAT(iothreadIdsOf(web.spec.cpu), ElementsAre(1, 2));
  EXPECT_EQ(web.placement.exclusive.format(), "1-5");
  EXPECT_THAT(vcpuCpusById(s->vm(kPinned)->spec.cpu, s->vm(kPinned)->placement), ElementsAre(9, -1));
  const VmRecord& db = *s->vm(kDb);
  EXPECT_TRUE(db.defined);
  EXPECT_THAT(db.placement.vcpuCpus, ElementsAre(Pair(0, 6), Pair(1, 7)));
  EXPECT_THAT(db.placement.iothreadCpus, ElementsAre(Pair(1, -1)));
  EXPECT_EQ(s->shared().format(), "0,8,10-15");
  ASSERT_TRUE(checkLedgerInvariants(*s, *topology_, config_).ok());
}

TEST_F(LedgerUpgradeTest, TheSameRequestWithExplicitIdsIsTheSameVm) {
  auto ledger = open();
  ASSERT_TRUE(ledger);
  const StatePtr now = ledger->state();
  VmSpec web = now->vm(kWeb)->spec;
  web.cpu.onlineVcpus = {0, 1, 2, 3};
  web.cpu.maxVcpus = 4;
  web.cpu.iothreadIds = {1, 2};
  auto again = ledger->apply(&Ledger::decideAdmitVm, web);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->exclusive.format(), "1-5");
  // Another id set is another request.
  web.cpu.onlineVcpus = {0, 1, 3, 5};
  web.cpu.maxVcpus = 6;
  EXPECT_EQ(ledger->apply(&Ledger::decideAdmitVm, web).error().code(), ErrorCode::kFailedPrecondition);
}

TEST_F(LedgerUpgradeTest, NewDecisionsAreStoredBesideTheOldRecords) {
  {
    auto ledger = open();
    ASSERT_TRUE(ledger);
    ASSERT_TRUE(ledger->apply(&Ledger::decideReleaseVm, kPinned).ok());
    VmSpec sparse;
    sparse.uuid = "11111111-0000-4000-8000-000000000004";
    sparse.cpu.name = "sparse";
    sparse.cpu.vcpus = 2;
    sparse.cpu.onlineVcpus = {0, 2};
    sparse.cpu.maxVcpus = 3;
    sparse.cpu.cpuPolicy = VmCpuPolicy::kMixed;
    sparse.cpu.mixedDedicatedVcpus = {2};
    sparse.cpu.iothreads = 2;
    sparse.cpu.iothreadIds = {2, 5};
    sparse.memoryBytes = 256ULL << 20;
    ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitVm, sparse).ok());
  }
  auto reopened = open();
  ASSERT_TRUE(reopened);
  const StatePtr s = reopened->state();
  EXPECT_EQ(s->vm(kPinned), nullptr);
  const VmRecord& sparse = *s->vm("11111111-0000-4000-8000-000000000004");
  EXPECT_THAT(onlineVcpuIds(sparse.spec.cpu), ElementsAre(0, 2));
  EXPECT_EQ(sparse.placement.vcpuCpus.at(0), VmCpuPlacement::kShared);
  EXPECT_NE(sparse.placement.vcpuCpus.at(2), VmCpuPlacement::kShared);
  EXPECT_FALSE(sparse.placement.vcpuCpus.count(1));
  EXPECT_THAT(sparse.placement.iothreadCpus, ElementsAre(Pair(2, -1), Pair(5, -1)));
  EXPECT_THAT(s->vm(kWeb)->placement.vcpuCpus, ElementsAre(Pair(0, -1), Pair(1, 2), Pair(2, -1), Pair(3, 3)));
  ASSERT_TRUE(checkLedgerInvariants(*s, *topology_, config_).ok());
}

}  // namespace
}  // namespace vri
