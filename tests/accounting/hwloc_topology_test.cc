// Topologies read through real hwloc: synthetic strings, XML exports and the live machine.
#include "accounting/hwloc_topology.h"
#include "tests/support/test_paths.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kOneSocketNoSmt[] = "pack:1 numa:1 core:4 pu:1";
constexpr char kTwoSocketsSmt[] = "pack:2 numa:2 core:8 pu:2";
constexpr char kTwoSocketsLarge[] = "pack:2 numa:4 core:16 pu:2";
constexpr char kFourSocketsTwoNodes[] = "pack:4 numa:2 core:4 pu:2";
constexpr char kL3SmallerThanNode[] = "pack:2 numa:2 l3:2 core:4 pu:2";

std::string dataFile(const char* name) { return std::string(VRI_TEST_DATA_DIR) + "/" + name; }

Topology load(const char* synthetic) {
  auto topo = loadSyntheticTopology(synthetic);
  EXPECT_TRUE(topo.ok()) << synthetic << ": " << topo.error().message();
  return std::move(topo).value();
}

TEST(HwlocTopologyTest, OneSocketWithoutSmt) {
  const Topology topo = load(kOneSocketNoSmt);
  EXPECT_EQ(topo.onlineCpus().format(), "0-3");
  EXPECT_EQ(topo.packages().size(), 1u);
  EXPECT_EQ(topo.numaNodes().size(), 1u);
  EXPECT_EQ(topo.cores().size(), 4u);
  EXPECT_EQ(topo.maxThreadsPerCore(), 1);
  EXPECT_EQ(topo.siblings(2).format(), "2");
  EXPECT_TRUE(topo.offlineCpus().empty());
}

TEST(HwlocTopologyTest, TwoSocketsTwoNodesEachWithSmt) {
  const Topology topo = load(kTwoSocketsSmt);
  EXPECT_EQ(topo.onlineCpus().count(), 64);
  ASSERT_EQ(topo.packages().size(), 2u);
  EXPECT_EQ(topo.packages()[1].cpus.format(), "32-63");
  EXPECT_THAT(topo.packages()[1].numaNodes, ElementsAre(2, 3));
  ASSERT_EQ(topo.numaNodes().size(), 4u);
  EXPECT_EQ(topo.numaNode(1)->cpus.format(), "16-31");
  EXPECT_EQ(topo.numaNode(2)->package, 1);
  EXPECT_EQ(topo.cores().size(), 32u);
  EXPECT_EQ(topo.maxThreadsPerCore(), 2);
  EXPECT_TRUE(topo.uniformSmt());
  EXPECT_EQ(topo.siblings(17).format(), "16-17");
  EXPECT_EQ(topo.cpu(33)->package, 1);
  EXPECT_EQ(topo.cpu(33)->numaNode, 2);
  EXPECT_TRUE(topo.l3Groups().empty());
  EXPECT_EQ(topo.cpu(33)->l3, -1);
  // hwloc's synthetic machines report no distances: the conventional matrix applies.
  EXPECT_FALSE(topo.distancesFromMachine());
  EXPECT_EQ(topo.distance(0, 1), 11u);
  EXPECT_EQ(topo.distance(1, 2), 21u);
}

TEST(HwlocTopologyTest, TwoSocketsWith256Cpus) {
  const Topology topo = load(kTwoSocketsLarge);
  EXPECT_EQ(topo.onlineCpus().format(), "0-255");
  EXPECT_EQ(topo.packages().size(), 2u);
  EXPECT_EQ(topo.numaNodes().size(), 8u);
  EXPECT_EQ(topo.cores().size(), 128u);
  for (const NumaNode& node : topo.numaNodes()) {
    EXPECT_EQ(node.cpus.count(), 32) << "node " << node.id;
    EXPECT_EQ(node.cores.size(), 16u) << "node " << node.id;
  }
  EXPECT_EQ(topo.numaNode(7)->cpus.format(), "224-255");
  EXPECT_EQ(topo.siblings(255).format(), "254-255");
}

TEST(HwlocTopologyTest, FourSocketsWithTwoNodesEach) {
  const Topology topo = load(kFourSocketsTwoNodes);
  ASSERT_EQ(topo.packages().size(), 4u);
  EXPECT_EQ(topo.numaNodes().size(), 8u);
  for (const Package& package : topo.packages()) {
    EXPECT_EQ(package.numaNodes.size(), 2u);
    EXPECT_EQ(package.cpus.count(), 16);
  }
  EXPECT_THAT(topo.package(3)->numaNodes, ElementsAre(6, 7));
  EXPECT_EQ(topo.numaNode(5)->cpus.format(), "40-47");
  EXPECT_EQ(topo.distance(6, 7), 11u);
  EXPECT_EQ(topo.distance(0, 7), 21u);
}

TEST(HwlocTopologyTest, L3GroupsSmallerThanANumaNode) {
  const Topology topo = load(kL3SmallerThanNode);
  ASSERT_EQ(topo.l3Groups().size(), 8u);
  EXPECT_EQ(topo.numaNodes().size(), 4u);
  for (const L3Group& group : topo.l3Groups()) {
    EXPECT_EQ(group.cpus.count(), 8);
    const int node = topo.cpu(group.cpus.first())->numaNode;
    EXPECT_TRUE(group.cpus.isSubsetOf(topo.numaNode(node)->cpus)) << "L3 " << group.id;
  }
  EXPECT_EQ(topo.l3Group(1)->cpus.format(), "8-15");
  EXPECT_EQ(topo.l3Group(1)->package, 0);
  EXPECT_EQ(topo.core(3)->l3, 0);
  EXPECT_EQ(topo.core(4)->l3, 1);
  EXPECT_EQ(topo.l3Group(7)->package, 1);
}

TEST(HwlocTopologyTest, XmlWithOfflineCpusAndACoreWithOneThread) {
  auto topo = loadTopologyFromXmlFile(dataFile("offline-cpus.xml"));
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  EXPECT_EQ(topo->onlineCpus().format(), "0-4");
  EXPECT_EQ(topo->offlineCpus().format(), "5-7");
  ASSERT_EQ(topo->cores().size(), 3u);
  EXPECT_EQ(topo->siblings(4).format(), "4");
  EXPECT_EQ(topo->siblings(3).format(), "2-3");
  EXPECT_EQ(topo->maxThreadsPerCore(), 2);
  EXPECT_FALSE(topo->uniformSmt());
  EXPECT_EQ(topo->numaNode(0)->memoryBytes, 8ull << 30);
  EXPECT_EQ(topo->numaNode(0)->hugepages, (std::map<uint64_t, uint64_t>{{2 << 20, 0}}));
  EXPECT_EQ(topo->l3Groups().size(), 1u);
}

TEST(HwlocTopologyTest, XmlWithCpulessNodeHugepagesAndFirmwareDistances) {
  auto topo = loadTopologyFromXmlFile(dataFile("two-packages-cpuless-node.xml"));
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  ASSERT_EQ(topo->numaNodes().size(), 3u);
  const NumaNode* cpuless = topo->numaNode(2);
  ASSERT_NE(cpuless, nullptr);
  EXPECT_TRUE(cpuless->cpus.empty());
  EXPECT_EQ(cpuless->package, -1);
  EXPECT_EQ(cpuless->memoryBytes, 32ull << 30);
  EXPECT_EQ(topo->numaNode(0)->hugepages, (std::map<uint64_t, uint64_t>{{2ull << 20, 512}, {1ull << 30, 2}}));
  EXPECT_EQ(topo->numaNode(1)->hugepages, (std::map<uint64_t, uint64_t>{{2ull << 20, 256}}));
  EXPECT_TRUE(topo->distancesFromMachine());
  EXPECT_EQ(topo->distance(0, 1), 21u);
  EXPECT_EQ(topo->distance(1, 2), 40u);
  EXPECT_EQ(topo->distance(2, 2), 10u);
  EXPECT_EQ(topo->siblings(6).format(), "6");
  EXPECT_EQ(topo->siblings(5).format(), "4-5");
  EXPECT_FALSE(topo->uniformSmt());
  EXPECT_TRUE(topo->l3Groups().empty());
  EXPECT_EQ(topo->totalMemoryBytes(), (16ull + 8 + 32) << 30);
}

// The live machine, checked against the kernel's own view in sysfs.
TEST(HwlocTopologyTest, LiveMachineMatchesSysfs) {
  auto topo = loadLiveTopology();
  ASSERT_TRUE(topo.ok()) << topo.error().message();
  std::ifstream online_file("/sys/devices/system/cpu/online");
  ASSERT_TRUE(online_file) << "missing /sys/devices/system/cpu/online: sysfs must be mounted";
  std::string online_text;
  std::getline(online_file, online_text);
  auto online = CpuSet::parse(online_text);
  ASSERT_TRUE(online.ok()) << online.error().message();
  EXPECT_EQ(topo->onlineCpus(), *online);
  EXPECT_GE(topo->numaNodes().size(), 1u);
  EXPECT_GT(topo->totalMemoryBytes(), 0u);
  int cpus_in_cores = 0;
  for (const Core& core : topo->cores()) cpus_in_cores += core.cpus.count();
  EXPECT_EQ(cpus_in_cores, online->count());
}

TEST(HwlocTopologyTest, RefusesBadSources) {
  struct Case {
    std::string source;
    const char* why;
  };
  const Case cases[] = {
      {"synthetic:pack:two core:2", "invalid synthetic topology \"pack:two core:2\""},
      {"synthetic:", "invalid synthetic topology"},
      {"xml:/nonexistent/topology.xml", "No such file"},
      {"xml:" + dataFile("README.md"), "invalid topology XML"},
      {"hwloc", "unknown topology source \"hwloc\""},
  };
  for (const Case& c : cases) {
    auto topo = loadTopology(c.source);
    ASSERT_FALSE(topo.ok()) << c.source;
    EXPECT_THAT(topo.error().message(), HasSubstr(c.why)) << c.source;
  }
}

TEST(HwlocTopologyTest, RefusesTruncatedAndEmptyXml) {
  std::ifstream file(dataFile("two-packages-cpuless-node.xml"));
  std::stringstream whole;
  whole << file.rdbuf();
  const std::string xml = whole.str();
  EXPECT_TRUE(loadTopologyFromXml(xml).ok());
  auto truncated = loadTopologyFromXml(xml.substr(0, xml.size() / 2));
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.error().message(), HasSubstr("invalid topology XML"));
  EXPECT_FALSE(loadTopologyFromXml("").ok());
  EXPECT_FALSE(loadTopologyFromXml("<topology version=\"2.0\"></topology>").ok());
}

}  // namespace
}  // namespace vri
