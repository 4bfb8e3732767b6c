// Topology built from literal descriptions: derivation and validation.
#include "accounting/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Two packages, one NUMA node each, two cores of two threads per package;
// SMT siblings numbered apart (cpu and cpu+4) as many BIOSes do.
TopologyDescription dualSocketHt() {
  TopologyDescription d;
  d.source = "literal dual socket";
  d.numaNodes = {{0, 0, 1 << 30, {}}, {1, 1, 2u << 30, {{2 << 20, 10}}}};
  for (int cpu = 0; cpu < 8; ++cpu) {
    const int core = cpu % 4;
    const int package = core / 2;
    d.cpus.push_back({cpu, core, package, package, package});
  }
  return d;
}

TEST(TopologyTest, DerivesPackagesNodesCoresAndSiblings) {
  auto topo = Topology::create(dualSocketHt());
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  EXPECT_EQ(topo->onlineCpus().format(), "0-7");
  ASSERT_EQ(topo->packages().size(), 2u);
  EXPECT_EQ(topo->packages()[0].cpus.format(), "0-1,4-5");
  EXPECT_EQ(topo->packages()[1].cpus.format(), "2-3,6-7");
  EXPECT_THAT(topo->packages()[1].cores, ElementsAre(2, 3));
  EXPECT_EQ(topo->numaNode(1)->cpus.format(), "2-3,6-7");
  EXPECT_EQ(topo->numaNode(1)->hugepages.at(2 << 20), 10u);
  EXPECT_EQ(topo->siblings(5).format(), "1,5");
  EXPECT_EQ(topo->siblings(42).format(), "");
  EXPECT_EQ(topo->cpu(6)->core, 2);
  EXPECT_EQ(topo->cpu(6)->l3, 1);
  EXPECT_EQ(topo->l3Group(1)->cpus.format(), "2-3,6-7");
  EXPECT_EQ(topo->maxThreadsPerCore(), 2);
  EXPECT_TRUE(topo->uniformSmt());
  EXPECT_EQ(topo->totalMemoryBytes(), 3ull << 30);
  EXPECT_EQ(topo->cpu(8), nullptr);
  EXPECT_EQ(topo->core(4), nullptr);
  EXPECT_EQ(topo->numaNode(2), nullptr);
}

TEST(TopologyTest, ConventionalDistancesWhenTheMachineGivesNone) {
  TopologyDescription d = dualSocketHt();
  d.numaNodes.push_back({2, 0, 1 << 30, {}});  // a CPU-less node inside package 0
  auto topo = Topology::create(d);
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  EXPECT_FALSE(topo->distancesFromMachine());
  EXPECT_EQ(topo->distance(0, 0), 10u);
  EXPECT_EQ(topo->distance(0, 2), 11u);
  EXPECT_EQ(topo->distance(0, 1), 21u);
  EXPECT_THAT(topo->package(0)->numaNodes, ElementsAre(0, 2));
  EXPECT_TRUE(topo->numaNode(2)->cpus.empty());
}

TEST(TopologyTest, DistancesFollowNodeIdsWhateverTheDescriptionOrder) {
  TopologyDescription d = dualSocketHt();
  d.numaNodes = {d.numaNodes[1], d.numaNodes[0]};  // node 1 first
  d.distances = {{10, 30}, {30, 10}};
  d.distances[0][1] = 31;  // from node 1 to node 0
  auto topo = Topology::create(d);
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  EXPECT_TRUE(topo->distancesFromMachine());
  EXPECT_EQ(topo->distance(1, 0), 31u);
  EXPECT_EQ(topo->distance(0, 1), 30u);
}

TEST(TopologyTest, RejectsInconsistentDescriptions) {
  struct Case {
    const char* name;
    void (*mutate)(TopologyDescription&);
    const char* why;
  };
  const Case cases[] = {
      {"no CPUs", [](TopologyDescription& d) { d.cpus.clear(); }, "no online CPU"},
      {"duplicate CPU", [](TopologyDescription& d) { d.cpus.push_back(d.cpus[0]); }, "CPU 0 is described twice"},
      {"unknown node", [](TopologyDescription& d) { d.cpus[0].numaNode = 7; }, "names NUMA node 7"},
      {"core across nodes", [](TopologyDescription& d) { d.cpus[4].numaNode = 1; }, "core 0 spans"},
      {"online and offline", [](TopologyDescription& d) { d.offlineCpus = CpuSet{3}; }, "both online and offline"},
      {"CPU out of range", [](TopologyDescription& d) { d.cpus[0].cpu = CpuSet::kMaxCpus; },
       "CPU id 8192 is out of range"},
      {"negative core", [](TopologyDescription& d) { d.cpus[0].core = -2; }, "core id -2"},
      {"duplicate node", [](TopologyDescription& d) { d.numaNodes.push_back(d.numaNodes[0]); }, "described twice"},
      {"ragged distances",
       [](TopologyDescription& d) {
         d.distances = {{10, 20}, {20}};
       },
       "not square"},
      {"short distances", [](TopologyDescription& d) { d.distances = {{10}}; }, "1 rows for 2 NUMA nodes"},
      {"L3 across packages",
       [](TopologyDescription& d) {
         d.cpus[2].l3 = 0;
         d.cpus[6].l3 = 0;
       },
       "L3 group 0 spans"},
  };
  for (const Case& c : cases) {
    TopologyDescription d = dualSocketHt();
    c.mutate(d);
    auto topo = Topology::create(d);
    ASSERT_FALSE(topo.ok()) << c.name;
    EXPECT_EQ(topo.error().code(), ErrorCode::kInvalidArgument) << c.name;
    EXPECT_THAT(topo.error().message(), HasSubstr(c.why)) << c.name;
  }
}

}  // namespace
}  // namespace vri
