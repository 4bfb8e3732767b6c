#include "vri/topology_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(FormatBytesTest, UsesBinaryUnits) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(2 << 20), "2 MiB");
  EXPECT_EQ(formatBytes(1ull << 30), "1 GiB");
  EXPECT_EQ(formatBytes(3ull << 29), "1.5 GiB");
  EXPECT_EQ(formatBytes(4186ull << 20), "4.1 GiB");
}

TEST(TopologyReportTest, ListsPackagesNodesCoresAndDistances) {
  auto topo = loadTopologyFromXmlFile(std::string(VRI_TEST_DATA_DIR) + "/two-packages-cpuless-node.xml");
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  const std::string report = formatTopology(*topo);
  EXPECT_THAT(report, HasSubstr("2 packages, 3 NUMA nodes, 0 L3 groups, 4 cores, 7 CPUs online"));
  EXPECT_THAT(report, HasSubstr("threads per core: 2 (not on every core), memory 56 GiB"));
  EXPECT_THAT(report, HasSubstr("Package 1: CPUs 4-6\n  NUMA node 1: CPUs 4-6, memory 8 GiB, hugepages 2 MiB x 256\n"
                                "    core 2: CPUs 4-5\n    core 3: CPU 6\n"));
  EXPECT_THAT(report, HasSubstr("NUMA node 0: CPUs 0-3, memory 16 GiB, hugepages 2 MiB x 512, 1 GiB x 2"));
  EXPECT_THAT(report, HasSubstr("\nNUMA node 2: no CPUs, memory 32 GiB\n"));
  EXPECT_THAT(report, HasSubstr("NUMA distances (from the machine):\n"
                                "         0    1    2\n"
                                "   0:   10   21   40\n"
                                "   1:   21   10   40\n"
                                "   2:   40   40   10\n"));
}

TEST(TopologyReportTest, ShowsL3GroupsAndOfflineCpus) {
  auto l3 = loadSyntheticTopology("pack:1 numa:1 l3:2 core:2 pu:2");
  ASSERT_TRUE(l3.ok());
  const std::string report = formatTopology(*l3);
  EXPECT_THAT(report, HasSubstr("  L3 0: CPUs 0-3\n  L3 1: CPUs 4-7\n"));
  EXPECT_THAT(report, HasSubstr("core 2: CPUs 4-5  (L3 1)"));

  auto offline = loadTopologyFromXmlFile(std::string(VRI_TEST_DATA_DIR) + "/offline-cpus.xml");
  ASSERT_TRUE(offline.ok());
  EXPECT_THAT(formatTopology(*offline), HasSubstr("5 CPUs online, 3 offline"));
  EXPECT_THAT(formatTopology(*offline), HasSubstr("Offline CPUs: 5-7"));
}

TEST(CpuPoolsReportTest, SaysWhereReservedCpusGo) {
  CpuPools pools{*CpuSet::parse("0-1"), *CpuSet::parse("0-7"), *CpuSet::parse("2-7")};
  const std::string report = formatCpuPools(pools, false);
  EXPECT_THAT(report, HasSubstr("reserved:   0-1 (2 CPUs)"));
  EXPECT_THAT(report, HasSubstr("shared:     0-7 (8 CPUs; reserved CPUs included)"));
  EXPECT_THAT(report, HasSubstr("6 CPUs can be assigned (2-7)"));
  pools.shared = *CpuSet::parse("2-7");
  EXPECT_THAT(formatCpuPools(pools, true), HasSubstr("strict-cpu-reservation"));
}

}  // namespace
}  // namespace vri
