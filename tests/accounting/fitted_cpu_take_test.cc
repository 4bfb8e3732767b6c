// VRI's own placement: NUMA best fit, SMT siblings together, L3 best fit.
#include "accounting/fitted_cpu_take.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "accounting/hwloc_topology.h"
#include "accounting/kubelet_cpu_take.h"

namespace vri {
namespace {

Topology synthetic(const char* description) { return std::move(loadSyntheticTopology(description)).value(); }
CpuSet cpus(const char* list) { return std::move(CpuSet::parse(list)).value(); }

int nodesSpanned(const Topology& topo, const CpuSet& set) {
  std::set<int> nodes;
  for (int cpu : set) nodes.insert(topo.cpu(cpu)->numaNode);
  return static_cast<int>(nodes.size());
}

constexpr char kTwoByTwo[] = "pack:2 numa:2 core:8 pu:2";  // 4 nodes of 16 CPUs, siblings 2k and 2k+1

TEST(FittedCpuTakeTest, StaysInsideOneNodeWhereKubeletSpansTwo) {
  const Topology topo = synthetic(kTwoByTwo);
  const CpuSet available = topo.onlineCpus() - cpus("0-11");  // node 0 keeps 4 free CPUs
  auto packed = takePacked(topo, available, 8, false);
  EXPECT_EQ(packed->format(), "12-19");
  EXPECT_EQ(nodesSpanned(topo, *packed), 2);
  auto fitted = takeFitted(topo, available, 8);
  ASSERT_TRUE(fitted.ok());
  EXPECT_EQ(fitted->format(), "16-23");
  EXPECT_EQ(nodesSpanned(topo, *fitted), 1);
}

TEST(FittedCpuTakeTest, BestFitKeepsLargeHolesWhole) {
  const Topology topo = synthetic(kTwoByTwo);
  // Node 1 has 10 free CPUs, nodes 2 and 3 are empty: 8 CPUs go to node 1.
  const CpuSet available = cpus("22-63");
  EXPECT_EQ(takeFitted(topo, available, 8)->format(), "22-29");
  // 16 CPUs then still fit a whole node.
  EXPECT_EQ(takeFitted(topo, available - cpus("22-29"), 16)->format(), "32-47");
}

TEST(FittedCpuTakeTest, EvenRequestsTakeWholeCoresOddOnesReuseSplitCores) {
  const Topology topo = synthetic("pack:1 numa:1 core:4 pu:2");
  const CpuSet available = topo.onlineCpus() - CpuSet{0};  // core 0 is split: CPU 1 free
  EXPECT_EQ(takeFitted(topo, available, 4)->format(), "2-5");
  EXPECT_EQ(takeFitted(topo, available, 3)->format(), "1-3");
  EXPECT_EQ(takeFitted(topo, available, 1)->format(), "1");
  // Nothing split yet: an odd request splits exactly one core.
  EXPECT_EQ(takeFitted(topo, topo.onlineCpus(), 3)->format(), "0-2");
}

TEST(FittedCpuTakeTest, WholeCoresFromTheL3GroupTheyFitBest) {
  const Topology topo = synthetic("pack:1 numa:1 l3:2 core:4 pu:2");  // L3 0: CPUs 0-7, L3 1: 8-15
  const CpuSet available = topo.onlineCpus() - cpus("8-9");
  EXPECT_EQ(takePacked(topo, available, 6, false)->format(), "0-5");
  EXPECT_EQ(takeFitted(topo, available, 6)->format(), "10-15");
}

TEST(FittedCpuTakeTest, SpansTheFewestNodesInsideOnePackage) {
  const Topology topo = synthetic(kTwoByTwo);
  // Package 0: nodes with 10 and 10 free; package 1: 12 and 4.
  const CpuSet available = cpus("0-9,16-25,32-43,48-51");
  auto taken = takeFitted(topo, available, 20);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->format(), "0-9,16-25");
  // 24 CPUs fit no package: the fullest nodes first, wherever they are.
  EXPECT_EQ(takeFitted(topo, available, 24)->format(), "0-9,16-17,32-43");
}

TEST(FittedCpuTakeTest, RefusesWhatDoesNotFit) {
  const Topology topo = synthetic("pack:1 numa:1 core:2 pu:2");
  auto refused = takeFitted(topo, cpus("0-2"), 4);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(refused.error().message(), "not enough CPUs: requested 4, 3 available");
}

// Under random churn every request that fits by count is granted exactly, from
// free CPUs, inside one node whenever one node could hold it.
TEST(FittedCpuTakeTest, RandomChurnKeepsItsPromises) {
  for (const char* shape : {kTwoByTwo, "pack:2 numa:4 core:16 pu:2", "pack:1 numa:2 l3:2 core:3 pu:1"}) {
    const Topology topo = synthetic(shape);
    std::mt19937 random(7);
    CpuSet free = topo.onlineCpus();
    std::vector<CpuSet> held;
    const int sizes[] = {1, 2, 3, 4, 6, 8, 16};
    for (int step = 0; step < 3000; ++step) {
      if (!held.empty() && (random() % 3 == 0 || free.count() < 4)) {
        const size_t victim = random() % held.size();
        free |= held[victim];
        held.erase(held.begin() + static_cast<long>(victim));
        continue;
      }
      const int count = std::min(sizes[random() % 7], free.count());
      int largest_node_free = 0;
      for (const NumaNode& node : topo.numaNodes())
        largest_node_free = std::max(largest_node_free, (node.cpus & free).count());
      auto taken = takeFitted(topo, free, count);
      ASSERT_TRUE(taken.ok()) << shape << " step " << step << ": " << taken.error().message();
      ASSERT_EQ(taken->count(), count);
      ASSERT_TRUE(taken->isSubsetOf(free));
      if (count <= largest_node_free && count > 0) {
        ASSERT_EQ(nodesSpanned(topo, *taken), 1) << shape << " step " << step;
      }
      free -= *taken;
      held.push_back(*taken);
    }
  }
}

}  // namespace
}  // namespace vri
