#include "accounting/cpu_pools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

Topology synthetic(const char* description) { return std::move(loadSyntheticTopology(description)).value(); }

TEST(ChooseReservedCpusTest, FollowsKubeletOrderOnAnIdleNode) {
  const Topology topo = synthetic("pack:2 numa:2 core:8 pu:2");
  struct Case {
    int count;
    const char* expected;
  };
  const Case cases[] = {
      {0, ""},      {1, "0"},      // one thread of the lowest core
      {2, "0-1"},                  // a whole core
      {3, "0-2"},                  // a whole core, then a thread of the next
      {16, "0-15"},                // a whole NUMA node
      {17, "0-16"}, {32, "0-31"},  // a whole package
      {34, "0-33"},                // a package and a core of the next
      {64, "0-63"},
  };
  for (const Case& c : cases) {
    auto reserved = chooseReservedCpus(topo, c.count);
    ASSERT_TRUE(reserved.ok()) << c.count;
    EXPECT_EQ(reserved->format(), c.expected) << c.count;
  }
}

TEST(ChooseReservedCpusTest, TakesWholeCoresWhenSiblingsAreNumberedApart) {
  // Siblings cpu and cpu+4, as many BIOSes number them.
  TopologyDescription d;
  d.numaNodes = {{0, 0, 0, {}}};
  for (int cpu = 0; cpu < 8; ++cpu) d.cpus.push_back({cpu, cpu % 4, 0, 0, -1});
  const Topology topo = std::move(Topology::create(d)).value();
  EXPECT_EQ(chooseReservedCpus(topo, 2)->format(), "0,4");
  EXPECT_EQ(chooseReservedCpus(topo, 3)->format(), "0-1,4");
  EXPECT_EQ(chooseReservedCpus(topo, 4)->format(), "0-1,4-5");
}

TEST(ChooseReservedCpusTest, RefusesImpossibleCounts) {
  const Topology topo = synthetic("pack:1 numa:1 core:2 pu:2");
  EXPECT_THAT(chooseReservedCpus(topo, 5).error().message(), HasSubstr("cannot reserve 5 CPUs: the machine has 4"));
  EXPECT_THAT(chooseReservedCpus(topo, -1).error().message(), HasSubstr("negative"));
}

TEST(ComputeCpuPoolsTest, ReservedCpusServeTheSharedPoolUnlessStrict) {
  const Topology topo = synthetic("pack:1 numa:1 core:4 pu:2");
  ReservedCpusConfig config;
  config.count = 2;
  auto pools = computeCpuPools(topo, config);
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->reserved.format(), "0-1");
  EXPECT_EQ(pools->shared.format(), "0-7");
  EXPECT_EQ(pools->assignable.format(), "2-7");

  config.strict = true;
  pools = computeCpuPools(topo, config);
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->shared.format(), "2-7");
}

TEST(ComputeCpuPoolsTest, ExplicitReservedCpus) {
  const Topology topo = synthetic("pack:1 numa:1 core:4 pu:2");
  ReservedCpusConfig config;
  config.cpus = *CpuSet::parse("6-7");
  auto pools = computeCpuPools(topo, config);
  ASSERT_TRUE(pools.ok());
  EXPECT_EQ(pools->reserved.format(), "6-7");
  EXPECT_EQ(pools->assignable.format(), "0-5");
}

TEST(ComputeCpuPoolsTest, RefusesBadReservations) {
  const Topology topo = synthetic("pack:1 numa:1 core:2 pu:2");
  ReservedCpusConfig offline;
  offline.cpus = *CpuSet::parse("2-9");
  EXPECT_THAT(computeCpuPools(topo, offline).error().message(),
              HasSubstr("names CPUs that are not online: 4-9 (online: 0-3)"));

  ReservedCpusConfig both;
  both.cpus = CpuSet{0};
  both.count = 1;
  EXPECT_THAT(computeCpuPools(topo, both).error().message(), HasSubstr("not both"));

  ReservedCpusConfig everything;
  everything.count = 4;
  everything.strict = true;
  EXPECT_THAT(computeCpuPools(topo, everything).error().message(), HasSubstr("leaves no CPU for the shared pool"));
  everything.strict = false;
  EXPECT_TRUE(computeCpuPools(topo, everything).ok());
}

}  // namespace
}  // namespace vri
