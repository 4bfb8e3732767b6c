// NUMA memory and topology-manager policies on literal machines: 2 and 4 NUMA
// nodes, asymmetric memory, hugepages, a node without CPUs; both scopes.
#include "accounting/topology_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uint64_t kGiB = 1ULL << 30;

// Two nodes of 8 CPUs (4 cores x 2 threads); node 0 has 16 GiB, node 1 32 GiB of which four
// 1 GiB pages (so 28 GiB of regular memory).
Topology twoNodes() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 16 * kGiB, {}}, {1, 1, 32 * kGiB, {{kGiB, 4}}}};
  for (int cpu = 0; cpu < 16; ++cpu) d.cpus.push_back({cpu, cpu / 2, cpu / 8, cpu / 8, -1});
  return std::move(Topology::create(d)).value();
}

// Nodes 0-2 with 4 CPUs and 8 GiB each, node 3 with 64 GiB and no CPUs. Node 0
// is far from node 1 (31) and close to node 2 (12).
Topology fourNodes() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 8 * kGiB, {}}, {1, 0, 8 * kGiB, {}}, {2, 0, 8 * kGiB, {}}, {3, -1, 64 * kGiB, {}}};
  for (int cpu = 0; cpu < 12; ++cpu) d.cpus.push_back({cpu, cpu, 0, cpu / 4, -1});
  d.distances = {{10, 31, 12, 40}, {31, 10, 21, 40}, {12, 21, 10, 40}, {40, 40, 40, 10}};
  return std::move(Topology::create(d)).value();
}

NumaMemory memoryOf(const Topology& topo) { return std::move(NumaMemory::create(topo, {}, 0)).value(); }

TopologyManagerOptions policy(TopologyPolicy p, bool closest = false) { return {p, closest}; }

AlignmentRequest ask(int cpus, uint64_t memory, std::map<MemoryResource, uint64_t> more = {}) {
  AlignmentRequest r{"pod web", cpus, std::move(more)};
  if (memory) r.memory[kRegularMemory] = memory;
  return r;
}

TEST(NumaMemoryTest, KeepsMemoryPerNodeAndResource) {
  const Topology topo = twoNodes();
  EXPECT_THAT(NumaMemory::create(topo, {{0, kGiB}}, 2 * kGiB).error().message(),
              HasSubstr("adds up to 1024 MiB, not the node-level reservation of 2048 MiB"));
  EXPECT_THAT(NumaMemory::create(topo, {{7, kGiB}}, kGiB).error().message(), HasSubstr("NUMA node 7"));
  NumaMemory memory = std::move(NumaMemory::create(topo, {{0, kGiB}, {1, kGiB}}, 2 * kGiB)).value();
  EXPECT_EQ(memory.cell(0, kRegularMemory).allocatable(), 15 * kGiB);
  EXPECT_EQ(memory.cell(1, kRegularMemory).total, 28 * kGiB);  // the hugepages come out of it
  EXPECT_EQ(memory.cell(1, kGiB).free(), 4 * kGiB);
  auto blocks = memory.allocate("vm/a", {1}, {{kRegularMemory, 4 * kGiB}, {kGiB, 2 * kGiB}});
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(NumaMemory::mems(*blocks).format(), "1");
  EXPECT_EQ(memory.cell(1, kGiB).free(), 2 * kGiB);
  auto refused = memory.allocate("vm/b", {1}, {{kGiB, 3 * kGiB}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(),
            "\"vm/b\" needs 3072 MiB of hugepages-1Gi on NUMA node(s) 1; 2048 MiB are free there "
            "(VMs hold 2048 MiB and pods 0 MiB of the 4096 MiB there)");
  EXPECT_EQ(memory.cell(1, kGiB).free(), 2 * kGiB);  // unchanged
  auto spread = memory.allocate("pod/c", {0, 1}, {{kRegularMemory, 20 * kGiB}});
  ASSERT_TRUE(spread.ok());
  EXPECT_EQ(spread->at(0).at(kRegularMemory), 15 * kGiB);
  EXPECT_EQ(spread->at(1).at(kRegularMemory), 5 * kGiB);
  ASSERT_TRUE(memory.release("vm/a").ok());
  EXPECT_EQ(memory.cell(1, kGiB).free(), 4 * kGiB);
}

TEST(TopologyManagerTest, NoneDoesNotAlign) {
  const Topology topo = twoNodes();
  auto affinity =
      alignOnNuma(topo, topo.onlineCpus(), memoryOf(topo), ask(10, 40 * kGiB), policy(TopologyPolicy::kNone));
  ASSERT_TRUE(affinity.ok());
  EXPECT_TRUE(affinity->nodes.empty());
}

TEST(TopologyManagerTest, EveryPolicyOnTwoNodes) {
  const Topology topo = twoNodes();
  const NumaMemory memory = memoryOf(topo);
  struct Case {
    const char* name;
    TopologyPolicy policy;
    AlignmentRequest request;
    CpuSet free;
    std::vector<int> nodes;  // empty with error: refused
    bool preferred;
    const char* error;
  };
  const CpuSet all = topo.onlineCpus();
  const CpuSet node0_busy = all - CpuSet::range(0, 5);  // node 0 keeps 2 free CPUs
  const Case cases[] = {
      {"fits node 0", TopologyPolicy::kBestEffort, ask(4, 8 * kGiB), all, {0}, true, nullptr},
      {"memory only fits node 1", TopologyPolicy::kBestEffort, ask(4, 20 * kGiB), all, {1}, true, nullptr},
      {"needs both nodes anyway", TopologyPolicy::kRestricted, ask(10, 8 * kGiB), all, {0, 1}, true, nullptr},
      {"could fit one node, now only two: best-effort",
       TopologyPolicy::kBestEffort,
       ask(4, 16 * kGiB),
       node0_busy,
       {1},
       true,
       nullptr},
      {"could fit one node, now only two: best-effort admits",
       TopologyPolicy::kBestEffort,
       ask(8, 4 * kGiB),
       node0_busy - CpuSet{8},
       {0, 1},
       false,
       nullptr},
      {"could fit one node, now only two: restricted refuses",
       TopologyPolicy::kRestricted,
       ask(8, 4 * kGiB),
       node0_busy - CpuSet{8},
       {},
       false,
       "needs 8 CPUs and 4 GiB on 1 NUMA node(s); the narrowest fit now is nodes 0,1"},
      {"single-numa-node fits", TopologyPolicy::kSingleNumaNode, ask(6, 26 * kGiB), all, {1}, true, nullptr},
      {"single-numa-node refuses",
       TopologyPolicy::kSingleNumaNode,
       ask(10, 24 * kGiB),
       all,
       {},
       false,
       "needs 10 CPUs and 24 GiB on one NUMA node; node 0 has 8 CPUs and 16 GiB free, node 1 has 8 CPUs and 28 GiB "
       "free"},
      {"1 GiB pages come from node 1",
       TopologyPolicy::kSingleNumaNode,
       ask(2, 0, {{kGiB, 2 * kGiB}}),
       all,
       {1},
       true,
       nullptr},
      {"more 1 GiB pages than node 1 has",
       TopologyPolicy::kRestricted,
       ask(2, 0, {{kGiB, 5 * kGiB}}),
       all,
       {},
       false,
       "needs 2 CPUs and 5 GiB of hugepages-1Gi on the NUMA nodes"},
      {"best-effort admits what no node set holds",
       TopologyPolicy::kBestEffort,
       ask(2, 0, {{kGiB, 5 * kGiB}}),
       all,
       {0, 1},
       false,
       nullptr},
  };
  for (const Case& c : cases) {
    auto affinity = alignOnNuma(topo, c.free, memory, c.request, policy(c.policy));
    if (c.error != nullptr) {
      ASSERT_FALSE(affinity.ok()) << c.name;
      EXPECT_EQ(affinity.error().code(), ErrorCode::kResourceExhausted) << c.name;
      EXPECT_THAT(affinity.error().message(), HasSubstr(c.error)) << c.name;
      continue;
    }
    ASSERT_TRUE(affinity.ok()) << c.name << ": " << affinity.error().message();
    EXPECT_EQ(affinity->nodes, c.nodes) << c.name;
    EXPECT_EQ(affinity->preferred, c.preferred) << c.name;
  }
}

TEST(TopologyManagerTest, FourNodesCpulessMemoryAndClosestNodes) {
  const Topology topo = fourNodes();
  const NumaMemory memory = memoryOf(topo);
  // Memory without CPUs: the CPU-less node is a fit of its own.
  EXPECT_THAT(
      alignOnNuma(topo, topo.onlineCpus(), memory, ask(0, 48 * kGiB), policy(TopologyPolicy::kSingleNumaNode))->nodes,
      ElementsAre(3));
  // 6 CPUs need two nodes: the lowest ids, or with prefer-closest-numa-nodes the closest pair.
  EXPECT_THAT(
      alignOnNuma(topo, topo.onlineCpus(), memory, ask(6, 4 * kGiB), policy(TopologyPolicy::kRestricted))->nodes,
      ElementsAre(0, 1));
  EXPECT_THAT(
      alignOnNuma(topo, topo.onlineCpus(), memory, ask(6, 4 * kGiB), policy(TopologyPolicy::kRestricted, true))->nodes,
      ElementsAre(0, 2));
  // CPUs and a lot of memory: CPU nodes plus the memory node.
  auto wide = alignOnNuma(topo, topo.onlineCpus(), memory, ask(4, 40 * kGiB), policy(TopologyPolicy::kBestEffort));
  ASSERT_TRUE(wide.ok());
  EXPECT_THAT(wide->nodes, ElementsAre(0, 3));
  EXPECT_TRUE(wide->preferred);
}

TEST(TopologyManagerTest, ContainerScopeAlignsEachContainerPodScopeTheWhole) {
  const Topology topo = twoNodes();
  const NumaMemory memory = memoryOf(topo);
  const auto single = policy(TopologyPolicy::kSingleNumaNode);
  // Two containers of 6 CPUs: one node each with scope container...
  CpuSet free = topo.onlineCpus();
  auto first = alignOnNuma(topo, free, memory, ask(6, kGiB), single);
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(first->nodes, ElementsAre(0));
  free -= CpuSet::range(0, 5);
  auto second = alignOnNuma(topo, free, memory, ask(6, kGiB), single);
  ASSERT_TRUE(second.ok());
  EXPECT_THAT(second->nodes, ElementsAre(1));
  // ... but as one pod of 12 CPUs no single node holds them.
  EXPECT_FALSE(alignOnNuma(topo, topo.onlineCpus(), memory, ask(12, 2 * kGiB), single).ok());
  EXPECT_THAT(
      alignOnNuma(topo, topo.onlineCpus(), memory, ask(12, 2 * kGiB), policy(TopologyPolicy::kRestricted))->nodes,
      ElementsAre(0, 1));
  EXPECT_EQ(*parseTopologyPolicy("single-numa-node"), TopologyPolicy::kSingleNumaNode);
  EXPECT_FALSE(parseTopologyPolicy("single").ok());
}

}  // namespace
}  // namespace vri
