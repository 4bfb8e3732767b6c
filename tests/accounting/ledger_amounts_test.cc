// Amounts at the edges of their types: the ledger refuses them on every
// decision, with the field's name and nothing changed, and a ledger file that
// already holds one (written before these checks) loads with the value reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "accounting/hwloc_topology.h"
#include "accounting/ledger.h"
#include "accounting/sqlite_ledger_store.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
constexpr uint64_t kMaxUint64 = std::numeric_limits<uint64_t>::max();

std::shared_ptr<const Topology> eightCpus() {
  return std::make_shared<const Topology>(
      std::move(loadSyntheticTopology("pack:1 numa:2(memory=4GiB) core:2 pu:2")).value());
}

LedgerConfig config() {
  LedgerConfig c;
  c.pool.reserved.count = 1;
  c.allocatableMemoryBytes = 8ULL << 30;
  return c;
}

std::unique_ptr<Ledger> open(const std::string& file) {
  auto store = SqliteLedgerStore::open(file, Durability::kNormal);
  EXPECT_TRUE(store.ok()) << store.error().message();
  auto ledger = Ledger::open(eightCpus(), config(), std::move(store).value());
  EXPECT_TRUE(ledger.ok()) << ledger.error().message();
  return std::move(ledger).value();
}

PodSpec pod(const std::string& uid, QosClass qos) { return {uid, "default/" + uid, qos, 0, 0}; }
ContainerSpec container(int64_t request, int64_t limit) {
  return {"app", "c0ffee", false, request, limit, std::nullopt, std::nullopt};
}

void expectRefused(const Result<void>& result, const char* field) {
  ASSERT_FALSE(result.ok()) << field;
  EXPECT_EQ(result.error().code(), ErrorCode::kInvalidArgument) << result.error().message();
  EXPECT_THAT(result.error().message(), HasSubstr(field));
}

template <typename T>
Result<void> dropValue(Result<T> r) {
  if (!r.ok()) return std::move(r).error();
  return {};
}

TEST(LedgerAmountsTest, SumsThatWouldWrapAreRefusedNamingTheField) {
  testing::TempDir tmp;
  auto ledger = open(tmp.sub("ledger.db"));
  ASSERT_TRUE(ledger
                  ->apply(&Ledger::decideAdmitContainer, pod("shared-a", QosClass::kBurstable), container(500, 0),
                          kNoneFinished)
                  .ok());
  const StatePtr before = ledger->state();

  // A Burstable request of 2^63-1 beside another shared tenant: the shared demand would wrap negative.
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitContainer, pod("b", QosClass::kBurstable),
                                        container(kMaxInt64, 0), kNoneFinished)),
                "cpu_request_milli");
  // A Guaranteed request of 2^32+1 CPUs is not one CPU.
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitContainer, pod("g", QosClass::kGuaranteed),
                                        container(4294967297000, 4294967297000), kNoneFinished)),
                "cpu_request_milli");
  // A pod overhead of 2^63-1 would set the pod's shares to 2.
  PodSpec overhead = pod("o", QosClass::kBurstable);
  overhead.overheadCpuMilli = kMaxInt64;
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitContainer, overhead, container(100, 0), kNoneFinished)),
                "overhead_cpu_milli");
  expectRefused(dropValue(ledger->apply(&Ledger::decideBindSandbox, overhead, "sandbox1")), "overhead_cpu_milli");
  // A resize to a limit of 2^63-1 would overflow the quota at every restart.
  expectRefused(dropValue(ledger->apply(&Ledger::decideResizeContainer, "shared-a", container(500, kMaxInt64))),
                "cpu_limit_milli");
  // Memory of 2^64-1 bytes, and parts that wrap to the right total.
  VmSpec vm;
  vm.uuid = "7d7e0a2e-0000-4000-8000-0000000000f1";
  vm.cpu.name = "huge";
  vm.cpu.vcpus = 1;
  vm.memoryBytes = kMaxUint64;
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitVm, vm)), "memory_bytes");
  vm.memoryBytes = 1ULL << 30;
  vm.memoryParts = {{VmMemoryPart::kNoCell, kMaxUint64, 0, {}}, {VmMemoryPart::kNoCell, (1ULL << 30) + 1, 0, {}}};
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitVm, vm)), "memory_parts");
  vm.memoryParts.clear();
  vm.strictNumaNodes = {7};  // this host has nodes 0 and 1
  expectRefused(dropValue(ledger->apply(&Ledger::decideAdmitVm, vm)), "strict_numa_nodes");

  EXPECT_EQ(ledger->state(), before) << "a refusal published a state";
  const StatePtr now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 500);
}

// A pod's overhead runs in its cgroup on the shared pool: it is admitted like a request.
TEST(LedgerAmountsTest, APodsCpuOverheadIsAdmittedAgainstTheSharedPool) {
  testing::TempDir tmp;
  auto ledger = open(tmp.sub("ledger.db"));
  PodSpec heavy = pod("heavy", QosClass::kBurstable);
  heavy.overheadCpuMilli = 8500;  // the shared pool has 8 CPUs
  auto refused = ledger->apply(&Ledger::decideBindSandbox, heavy, "5a5a");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_THAT(refused.error().message(), HasSubstr("overhead"));
  auto refused_container = ledger->apply(&Ledger::decideAdmitContainer, heavy, container(100, 0), kNoneFinished);
  ASSERT_FALSE(refused_container.ok());
  EXPECT_EQ(refused_container.error().code(), ErrorCode::kResourceExhausted);
  StatePtr now = ledger->state();
  EXPECT_EQ(now->pods.size(), 0u);
  heavy.overheadCpuMilli = 500;
  ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitContainer, heavy, container(100, 0), kNoneFinished).ok());
  now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 600);
  now = ledger->state();
  auto checked = checkLedgerInvariants(*now, ledger->topology(), config());
  EXPECT_TRUE(checked.ok()) << checked.error().message();
}

TEST(LedgerAmountsTest, ALedgerHoldingAmountsNoNodeHoldsLoadsAndReportsThem) {
  testing::TempDir tmp;
  const std::string file = tmp.sub("ledger.db");
  {
    // Written straight into the store, as a VRI without these checks would have.
    auto store = std::move(SqliteLedgerStore::open(file, Durability::kNormal)).value();
    PodRecord poisoned{pod("poisoned", QosClass::kBurstable), {}, {}};
    poisoned.spec.overheadCpuMilli = kMaxInt64;
    poisoned.containers["app"] = ContainerRecord{container(500, kMaxInt64), {}, {}};
    poisoned.containers["ok"] = ContainerRecord{{"ok", "0k0k", false, 250, 0, std::nullopt, std::nullopt}, {}, {}};
    VmRecord vm;
    vm.spec.uuid = "7d7e0a2e-0000-4000-8000-0000000000f2";
    vm.spec.cpu.name = "wrapped";
    vm.spec.cpu.vcpus = 1;
    vm.spec.memoryBytes = kMaxUint64;
    ASSERT_TRUE(store->apply({{poisoned}, {}, {vm}, {}, {}}).ok());
  }
  auto ledger = open(file);
  const std::vector<std::string>& problems = ledger->loadProblems();
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("overhead_cpu_milli")));
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("cpu_limit_milli")));
  EXPECT_THAT(problems, ::testing::Contains(HasSubstr("memory_bytes")));
  // What is sound stays: the pod and its other container; the sums count only it.
  StatePtr now = ledger->state();
  const PodRecord* kept = now->pod("poisoned");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->containers.count("ok"), 1u);
  EXPECT_EQ(kept->containers.count("app"), 0u);
  now = ledger->state();
  EXPECT_EQ(now->totals.sharedDemandMilli, 250);
  now = ledger->state();
  EXPECT_EQ(now->totals.admittedMemoryBytes, 0u);
  now = ledger->state();
  EXPECT_EQ(now->vm("7d7e0a2e-0000-4000-8000-0000000000f2"), nullptr);
  now = ledger->state();
  auto checked = checkLedgerInvariants(*now, ledger->topology(), config());
  EXPECT_TRUE(checked.ok()) << checked.error().message();
  // And it takes decisions again.
  EXPECT_TRUE(ledger
                  ->apply(&Ledger::decideAdmitContainer, pod("next", QosClass::kGuaranteed), container(1000, 1000),
                          kNoneFinished)
                  .ok());
}

}  // namespace
}  // namespace vri
