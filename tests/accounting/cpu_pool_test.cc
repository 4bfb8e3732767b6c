#include "accounting/cpu_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "accounting/hwloc_topology.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Topology> synthetic(const char* description) {
  return std::make_shared<const Topology>(std::move(loadSyntheticTopology(description)).value());
}
CpuSet cpus(const char* list) { return std::move(CpuSet::parse(list)).value(); }

CpuPool makePool(const char* shape, CpuPoolConfig config = {}) {
  auto pool = CpuPool::create(synthetic(shape), std::move(config));
  EXPECT_TRUE(pool.ok()) << pool.error().message();
  return std::move(pool).value();
}

// What a refusal must leave untouched.
struct Snapshot {
  std::map<std::string, ExclusiveGrant> grants;
  CpuSet shared, free;
  explicit Snapshot(const CpuPool& pool)
      : grants(pool.grants()), shared(pool.shared()), free(pool.freeForExclusive()) {}
  void expectUnchanged(const CpuPool& pool) const {
    EXPECT_EQ(pool.grants().size(), grants.size());
    for (const auto& [owner, grant] : grants) {
      ASSERT_NE(pool.grant(owner), nullptr);
      EXPECT_EQ(pool.grant(owner)->all(), grant.all());
    }
    EXPECT_EQ(pool.shared(), shared);
    EXPECT_EQ(pool.freeForExclusive(), free);
  }
};

TEST(CpuPoolTest, ExclusiveCpusLeaveTheSharedPoolAndComeBack) {
  CpuPoolConfig config;
  config.reserved.count = 2;
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2", config);
  EXPECT_EQ(pool.reserved().format(), "0-1");
  EXPECT_EQ(pool.shared().format(), "0-7");
  auto taken = pool.allocate("pod/p1/app", {4, {}});
  ASSERT_TRUE(taken.ok()) << taken.error().message();
  EXPECT_EQ(taken->format(), "2-5");
  EXPECT_EQ(pool.shared().format(), "0-1,6-7");
  EXPECT_EQ(pool.freeForExclusive().format(), "6-7");
  ASSERT_TRUE(pool.release("pod/p1/app").ok());
  EXPECT_EQ(pool.shared().format(), "0-7");
  EXPECT_EQ(pool.release("pod/p1/app").error().code(), ErrorCode::kNotFound);
}

TEST(CpuPoolTest, StrictReservationKeepsReservedCpusOutOfTheSharedPool) {
  CpuPoolConfig config;
  config.reserved.count = 2;
  config.reserved.strict = true;
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2", config);
  EXPECT_EQ(pool.shared().format(), "2-7");
  EXPECT_EQ(pool.exclusiveCapacity(), 5);
  ASSERT_TRUE(pool.allocate("a", {4, {}}).ok());
  EXPECT_EQ(pool.shared().format(), "6-7");
}

TEST(CpuPoolTest, NeverEmptiesTheSharedPool) {
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2");
  const Snapshot before(pool);
  auto refused = pool.allocate("vm/web01", {8, {}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(refused.error().message(),
            "\"vm/web01\" needs 8 exclusive CPUs; 8 are free but 1 of the 8 shared CPUs must stay shared, so at most "
            "7 can be taken");
  before.expectUnchanged(pool);
  ASSERT_TRUE(pool.allocate("vm/web01", {7, {}}).ok());
  EXPECT_EQ(pool.shared().count(), 1);
}

TEST(CpuPoolTest, SharedMinimumFollowsTheSharedDemand) {
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2");
  ASSERT_TRUE(pool.setMinSharedCpus(4).ok());
  const Snapshot before(pool);
  EXPECT_THAT(pool.allocate("a", {6, {}}).error().message(), HasSubstr("4 of the 8 shared CPUs must stay shared"));
  before.expectUnchanged(pool);
  ASSERT_TRUE(pool.allocate("a", {4, {}}).ok());
  EXPECT_THAT(pool.setMinSharedCpus(5).error().message(), HasSubstr("the shared pool has 4 CPUs"));
  EXPECT_EQ(pool.exclusiveCapacity(), 0);
}

// What the NodeResourceTopology object says a NUMA node has available: its CPUs free for exclusive
// use, as far as the shared pool's minimum lets them go.
TEST(CpuPoolTest, ExclusiveCapacityWithinANumaNodeCountsItsFreeCpusAndTheSharedMinimum) {
  CpuPoolConfig config;
  config.reserved.count = 1;
  CpuPool pool = makePool("pack:1 numa:2 core:2 pu:2", config);
  EXPECT_EQ(pool.reserved().format(), "0");
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("0-3")), 3);  // the reserved CPU is not for exclusive use
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("4-7")), 4);
  ASSERT_TRUE(pool.allocate("vm/a", {2, {}}).ok());
  EXPECT_EQ(pool.grant("vm/a")->all().format(), "2-3");
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("0-3")), 1);
  // Shared tenants need 5 CPUs: 6 are shared, so one request can take 1 wherever it is.
  ASSERT_TRUE(pool.setMinSharedCpus(5).ok());
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("0-3")), 1);
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("4-7")), 1);
  EXPECT_FALSE(pool.allocate("vm/b", {2, {}}).ok());
  ASSERT_TRUE(pool.allocate("vm/b", {1, {}}).ok());
  EXPECT_EQ(pool.exclusiveCapacityWithin(cpus("4-7")), 0);
}

TEST(CpuPoolTest, RefusesWithTheNumbersAndChangesNothing) {
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2");
  ASSERT_TRUE(pool.allocate("a", {2, {}}).ok());
  const Snapshot before(pool);
  auto too_big = pool.allocate("b", {9, {}});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().message(), "\"b\": need 9 exclusive CPUs; 6 are free");
  EXPECT_EQ(pool.allocate("a", {1, {}}).error().code(), ErrorCode::kAlreadyExists);
  EXPECT_EQ(pool.allocate("", {1, {}}).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(pool.allocate("c", {-1, {}}).error().code(), ErrorCode::kInvalidArgument);
  before.expectUnchanged(pool);
}

TEST(CpuPoolTest, AssignChecksOwnershipReservationAndOnlineCpus) {
  CpuPoolConfig config;
  config.reserved.cpus = CpuSet{0};
  CpuPool pool = makePool("pack:1 numa:1 core:4 pu:2", config);
  ASSERT_TRUE(pool.assign("user-pinned", {cpus("4-5"), {}}).ok());
  const Snapshot before(pool);
  EXPECT_EQ(pool.assign("x", {cpus("5-6"), {}}).error().message(), "\"x\": CPUs 5 belong to \"user-pinned\"");
  EXPECT_EQ(pool.assign("x", {cpus("0"), {}}).error().message(), "\"x\": CPUs 0 are reserved");
  EXPECT_EQ(pool.assign("x", {cpus("7-9"), {}}).error().message(), "\"x\": CPUs 8-9 are not online");
  EXPECT_EQ(pool.assign("x", {cpus("2"), cpus("2-3")}).error().message(), "\"x\": CPUs 2 are both used and held back");
  before.expectUnchanged(pool);
  ASSERT_TRUE(pool.assign("x", {cpus("2"), cpus("3")}).ok());
  EXPECT_EQ(pool.shared().format(), "0-1,6-7");
}

// Random allocations, VM placements and releases never break the pool's invariants.
TEST(CpuPoolTest, InvariantsHoldUnderRandomChurn) {
  CpuPoolConfig config;
  config.reserved.count = 4;
  config.minSharedCpus = 6;
  CpuPool pool = makePool("pack:2 numa:2 core:8 pu:2", config);
  std::mt19937 random(99);
  std::vector<std::string> owners;
  int refused = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::string owner = "t" + std::to_string(step);
    const int action = static_cast<int>(random() % 4);
    if (action == 0 && !owners.empty()) {
      const size_t victim = random() % owners.size();
      ASSERT_TRUE(pool.release(owners[victim]).ok());
      owners.erase(owners.begin() + static_cast<long>(victim));
    } else if (action == 1) {
      VmCpuRequest vm;
      vm.name = owner;
      vm.vcpus = 1 + static_cast<int>(random() % 6);
      vm.cpuPolicy = VmCpuPolicy::kDedicated;
      vm.guestThreadsPerCore = 1 + static_cast<int>(random() % 2);
      vm.threadPolicy = static_cast<ThreadPolicy>(random() % 3);
      vm.emulatorPolicy = static_cast<HelperThreadPolicy>(random() % 2);
      const Snapshot before(pool);
      if (pool.allocateVm(owner, vm).ok()) {
        owners.push_back(owner);
      } else {
        ++refused;
        before.expectUnchanged(pool);
      }
    } else {
      const Snapshot before(pool);
      if (pool.allocate(owner, {1 + static_cast<int>(random() % 8), {}}).ok()) {
        owners.push_back(owner);
      } else {
        ++refused;
        before.expectUnchanged(pool);
      }
    }
    // Grants are disjoint, avoid reserved CPUs, and the shared pool is the rest.
    CpuSet owned;
    for (const auto& [name, grant] : pool.grants()) {
      ASSERT_FALSE(grant.all().intersects(owned)) << "step " << step;
      ASSERT_FALSE(grant.all().intersects(pool.reserved())) << "step " << step;
      owned |= grant.all();
    }
    ASSERT_EQ(pool.shared(), pool.topology().onlineCpus() - owned);
    ASSERT_GE(pool.shared().count(), 6);
  }
  EXPECT_GT(refused, 0);  // the churn did reach the pool's limits
}

}  // namespace
}  // namespace vri
