// kubelet's own CPU-manager test cases, re-expressed, run with VRI's placement switched off.
#include "accounting/kubelet_cpu_take.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/cpu_take.h"
#include "accounting/hwloc_topology.h"
#include "tests/accounting/kubelet_topologies.h"

namespace vri {
namespace {

using testing::dualSocketHT;
using testing::dualSocketMultiNumaPerSocketHT;
using ::testing::HasSubstr;
using testing::multiSocketDualSocketPerNumaHT;
using testing::singleSocketHT;

CpuSet cpus(const char* list) { return std::move(CpuSet::parse(list)).value(); }

struct TakeCase {
  const char* name;
  Topology (*topology)();
  const char* available;
  int count;
  const char* expected;  // nullptr: a refusal
};

// Cases that packed and distributed (group size 1) answer alike.
const TakeCase kCommonCases[] = {
    {"more than available", singleSocketHT, "0,2,4,6", 5, nullptr},
    {"zero", singleSocketHT, "0-7", 0, ""},
    {"one CPU", singleSocketHT, "0-7", 1, "0"},
    {"one CPU, some taken", singleSocketHT, "1,3,5-7", 1, "6"},
    {"two CPUs: a whole core", singleSocketHT, "0-7", 2, "0,4"},
    {"all CPUs", singleSocketHT, "0-7", 8, "0-7"},
    {"two CPUs, one core totally free", singleSocketHT, "0-3,6", 2, "2,6"},
    {"a socket", dualSocketHT, "0-11", 6, "0,2,4,6,8,10"},
    {"a socket, multi-NUMA socket", dualSocketMultiNumaPerSocketHT, "0-79", 40, "0-19,40-59"},
    {"a NUMA node", dualSocketMultiNumaPerSocketHT, "0-79", 20, "0-9,40-49"},
    {"a NUMA node, one taken", dualSocketMultiNumaPerSocketHT, "10-39,50-79", 20, "10-19,50-59"},
    {"a socket and a NUMA node", dualSocketMultiNumaPerSocketHT, "0-79", 60, "0-29,40-69"},
    {"a socket and a NUMA node, a core taken", dualSocketMultiNumaPerSocketHT, "1-39,41-79", 60, "10-39,50-79"},
};

void expectTake(const TakeCase& c, const Result<CpuSet>& result) {
  if (c.expected == nullptr) {
    ASSERT_FALSE(result.ok()) << c.name;
    EXPECT_EQ(result.error().code(), ErrorCode::kResourceExhausted) << c.name;
    return;
  }
  ASSERT_TRUE(result.ok()) << c.name << ": " << result.error().message();
  EXPECT_EQ(result->format(), cpus(c.expected).format()) << c.name;
}

TEST(KubeletPackedTest, CommonCases) {
  for (const TakeCase& c : kCommonCases) expectTake(c, takePacked(c.topology(), cpus(c.available), c.count, false));
}

TEST(KubeletPackedTest, PackedCases) {
  const TakeCase cases[] = {
      {"one CPU from the socket with fewer free", dualSocketHT, "1-5,7-11", 1, "2"},
      {"4 cores: 3 fill the first node, 1 from the second", dualSocketHT, "0-11", 8, "0-2,4,6-8,10"},
      {"32 cores: 3 nodes filled, 2 cores from the fourth", dualSocketMultiNumaPerSocketHT, "0-79", 64, "0-31,40-71"},
      {"sockets inside NUMA nodes: a NUMA node", multiSocketDualSocketPerNumaHT, "0-79", 40, "0-19,40-59"},
      {"sockets inside NUMA nodes: a socket", multiSocketDualSocketPerNumaHT, "0-79", 20, "0-9,40-49"},
  };
  for (const TakeCase& c : cases) expectTake(c, takePacked(c.topology(), cpus(c.available), c.count, false));
}

TEST(KubeletPackedTest, RefusalGivesTheNumbers) {
  auto refused = takePacked(singleSocketHT(), cpus("0,2,4,6"), 5, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(), "not enough CPUs: requested 5, 4 available");
}

struct DistributedCase {
  const char* name;
  Topology (*topology)();
  const char* available;
  int count;
  int group;
  const char* expected;
};

TEST(KubeletDistributedTest, CommonCasesWithGroupOne) {
  for (const TakeCase& c : kCommonCases) {
    expectTake(c, takeDistributed(c.topology(), cpus(c.available), c.count, 1, false));
  }
}

TEST(KubeletDistributedTest, DistributedCases) {
  const DistributedCase cases[] = {
      {"4 cores, 2 per node", dualSocketHT, "0-11", 8, 1, "0-3,6-9"},
      {"32 cores, 8 per node", dualSocketMultiNumaPerSocketHT, "0-79", 64, 1,
       "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"},
      {"24 cores over the first 3 nodes", dualSocketMultiNumaPerSocketHT, "0-79", 48, 1,
       "0-7,10-17,20-27,40-47,50-57,60-67"},
      {"24 cores, all but 2 of the first node", dualSocketMultiNumaPerSocketHT, "1-29,32-39,41-69,72-79", 48, 1,
       "1-8,10-17,20-27,41-48,50-57,60-67"},
      {"24 cores over the last 3 nodes", dualSocketMultiNumaPerSocketHT, "2-29,31-39,42-69,71-79", 48, 1,
       "10-17,20-27,31-38,50-57,60-67,71-78"},
      {"8 cores, 2 per node", dualSocketMultiNumaPerSocketHT, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, 1,
       "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"},
      {"one CPU", dualSocketHT, "1-5,7-11", 1, 1, "1"},
      {"one CPU, group 2 falls back to packed", dualSocketHT, "1-5,7-11", 1, 2, "2"},
      {"13 cores over 2 nodes", dualSocketMultiNumaPerSocketHT, "0-79", 26, 1, "0-6,10-16,40-45,50-55"},
      {"13 cores over 2 nodes, group 2", dualSocketMultiNumaPerSocketHT, "0-79", 26, 2, "0-6,10-15,40-46,50-55"},
      {"31 cores, 1 CPU spills to nodes 0 and 1", dualSocketMultiNumaPerSocketHT, "0-79", 62, 1,
       "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"},
      {"31 cores, 2 CPUs spill to nodes 0, 1, 2 (group 2)", dualSocketMultiNumaPerSocketHT, "0-79", 62, 2,
       "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"},
      {"31 cores, spill to nodes 2, 3 for balance", dualSocketMultiNumaPerSocketHT, "0-8,10-18,20-39,40-48,50-58,60-79",
       62, 1, "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"},
      {"31 cores, spill to nodes 0, 2, 3 for balance (group 2)", dualSocketMultiNumaPerSocketHT,
       "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"},
      {"remainder only on nodes that can take it", dualSocketMultiNumaPerSocketHT,
       "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1, "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"},
  };
  for (const DistributedCase& c : cases) {
    auto result = takeDistributed(c.topology(), cpus(c.available), c.count, c.group, false);
    ASSERT_TRUE(result.ok()) << c.name << ": " << result.error().message();
    EXPECT_EQ(result->format(), cpus(c.expected).format()) << c.name;
  }
}

TEST(KubeletDistributedTest, AlignBySocketKeepsTheSplitInOnePackage) {
  // Node 0 and 2 are free, nodes 1 and 3 half free: the best balance spans
  // packages (nodes 0 and 2); align-by-socket keeps to package 0 (nodes 0, 1).
  const Topology topo = dualSocketMultiNumaPerSocketHT();
  const CpuSet available = cpus("0-14,20-34,40-54,60-74");
  auto spread = takeDistributed(topo, available, 30, 1, false);
  ASSERT_TRUE(spread.ok()) << spread.error().message();
  EXPECT_EQ(spread->format(), "0-7,20-27,40-46,60-66");
  auto aligned = takeDistributed(topo, available, 30, 1, true);
  ASSERT_TRUE(aligned.ok()) << aligned.error().message();
  EXPECT_EQ(aligned->format(), "0-14,40-54");
}

// prefer-align-cpus-by-uncorecache on one package with four L3 groups of
// four cores (8 CPUs each); CPUs 0 and 9 are taken.
TEST(KubeletUncoreTest, PrefersCompleteCoresInsideOneL3Group) {
  const Topology topo = std::move(loadSyntheticTopology("pack:1 numa:1 l3:4 core:4 pu:2")).value();
  const CpuSet available = topo.onlineCpus() - CpuSet{0, 9};
  // Without the option: whole cores, lowest first.
  EXPECT_EQ(takePacked(topo, available, 4, false)->format(), "2-5");
  // With it: the first L3 group where the request fills the fewest cores exactly.
  EXPECT_EQ(takePacked(topo, available, 4, true)->format(), "16-19");
  // Bigger than a group: a whole free group, then the rest inside another.
  EXPECT_EQ(takePacked(topo, available, 12, true)->format(), "16-27");
  // Without L3 objects kubelet treats each package as the uncore group.
  EXPECT_EQ(takePacked(dualSocketHT(), cpus("0-11"), 2, true)->format(), "0,6");
}

TEST(CpuTakeOptionsTest, FullPcpusOnlyRefusesMisalignedRequests) {
  CpuTakeOptions options;
  options.numaFit = false;
  options.fullPcpusOnly = true;
  auto odd = takeCpus(singleSocketHT(), cpus("0-7"), {3, {}}, options);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(odd.error().message(),
            "SMT alignment error: requested 3 CPUs, not a multiple of the 2 threads per core (full-pcpus-only)");
  // Five CPUs free but only core 0 (0,4) whole.
  auto short_of_cores = takeCpus(singleSocketHT(), cpus("0-4"), {4, {}}, options);
  ASSERT_FALSE(short_of_cores.ok());
  EXPECT_EQ(short_of_cores.error().message(), "SMT alignment error: need 2 whole cores (4 CPUs); 1 whole core is free");
  auto whole = takeCpus(singleSocketHT(), cpus("0-4,6"), {4, {}}, options);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ(whole->format(), "0,2,4,6");
  // Without the option the refused request splits cores 1 and 2.
  options.fullPcpusOnly = false;
  EXPECT_EQ(takeCpus(singleSocketHT(), cpus("0-4"), {4, {}}, options)->format(), "0-2,4");
}

TEST(CpuTakeOptionsTest, DistributeOptionUsesTheCoreAsGroupWithFullPcpusOnly) {
  CpuTakeOptions options;
  options.numaFit = false;
  options.distributeCpusAcrossNuma = true;
  EXPECT_EQ(takeCpus(dualSocketHT(), cpus("0-11"), {8, {}}, options)->format(), "0-3,6-9");
  options.fullPcpusOnly = true;
  EXPECT_EQ(takeCpus(dualSocketMultiNumaPerSocketHT(), cpus("0-79"), {26, {}}, options)->format(),
            "0-6,10-15,40-46,50-55");
}

TEST(CpuTakeOptionsTest, PreferredNodesFirstThenAnywhere) {
  CpuTakeOptions options;
  options.numaFit = false;
  const Topology topo = dualSocketMultiNumaPerSocketHT();
  // Package 1 is free; of package 0 only CPUs 10-14 (no whole core).
  const CpuSet available = cpus("10-14,20-39,60-79");
  CpuTakeRequest request{25, {2}};
  // Node 2 whole, then packed over the rest: two cores of node 3 and a thread
  // from package 0, which has fewer free CPUs.
  EXPECT_EQ(takeCpus(topo, available, request, options)->format(), "10,20-31,60-71");
  // align-by-socket widens the preference to node 2's package (nodes 2 and 3).
  options.alignBySocket = true;
  EXPECT_EQ(takeCpus(topo, available, request, options)->format(), "20-32,60-71");
}

TEST(CpuTakeOptionsTest, SingleNumaNodeRefusalNamesTheLargestFreeNode) {
  CpuTakeOptions options;
  options.fullPcpusOnly = true;
  CpuTakeRequest request{6, {}, true};
  // Node 0: cores 0 and 2 whole (4 CPUs); node 1: only core 1 whole.
  auto refused = takeCpus(dualSocketHT(), cpus("0,2,6,8,1,7,3"), request, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message(), "need 6 CPUs on one NUMA node with full cores; largest free: 4 on node 0");
  request.count = 4;
  EXPECT_EQ(takeCpus(dualSocketHT(), cpus("0,2,6,8,1,7,3"), request, options)->format(), "0,2,6,8");
}

}  // namespace
}  // namespace vri
