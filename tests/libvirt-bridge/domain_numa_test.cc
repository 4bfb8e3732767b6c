// Guest NUMA cells, <memnode>s, page sizes and memory devices read as libvirt
// means them, through the hook and vrid (in process, on real sockets). The
// host: two nodes, CPUs 0-3 and 4-7; node 0 with two 1 GiB pages and 512 of
// 2 MiB, node 1 with 256 of 2 MiB. Domains in tests/data/domains/ are as
// `virsh dumpxml` prints them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libvirt-bridge/domain_xml.h"
#include "tests/libvirt-bridge/hook_harness.h"

namespace vri {
namespace {

using testing::domainFile;
using ::testing::HasSubstr;
using testing::libvirtRefusal;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr uint64_t kMiB = 1ULL << 20, kGiB = 1ULL << 30;
constexpr char kTwoCells[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a61";
constexpr char kMemnodes[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a62";
constexpr char kMixedPages[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a63";
constexpr char kSystemPages[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a64";

class DomainNumaTest : public testing::HookTest {
 protected:
  void SetUp() override {
    TopologyDescription d;
    d.numaNodes = {{0, 0, 8 * kGiB, {{kGiB, 2}, {2 * kMiB, 512}}}, {1, 0, 8 * kGiB, {{2 * kMiB, 256}}}};
    for (int cpu = 0; cpu < 8; ++cpu) d.cpus.push_back({cpu, cpu / 2, 0, cpu / 4, -1});
    vrid_.topology = std::make_shared<const Topology>(std::move(Topology::create(d)).value());
    HookTest::SetUp();
  }
  // Where the ledger holds a VM's memory: node -> page size (0: regular) -> bytes.
  MemoryBlocks memoryOf(const std::string& uuid) {
    const StatePtr now = vrid_.daemon().node().state();
    return now->vm(uuid)->memory;
  }
  // The NUMA node of each of a VM's vCPUs that has a CPU of its own.
  std::map<int, int> vcpuNodes(const v1::VmAllocation& allocation) {
    std::map<int, int> nodes;
    for (int vcpu = 0; vcpu < allocation.vcpu_cpus_size(); ++vcpu) {
      if (allocation.vcpu_cpus(vcpu) >= 0) nodes[vcpu] = allocation.vcpu_cpus(vcpu) / 4;
    }
    return nodes;
  }
};

TEST_F(DomainNumaTest, StrictMemnodesBindTheirCellsMemoryAndPreferredOnesBindNothing) {
  // Cell 0 strict on node 1, cell 1 preferred on node 0: the kernel may put cell 1 anywhere, so it is VRI's to place.
  HookOutcome prepared = hook("two-cells-memnodes", "prepare", "begin", domainFile("two-cells-memnodes.xml"));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  const v1::VmAllocation placed = vm(kMemnodes).allocation();
  EXPECT_THAT(placed.cell_nodes(), UnorderedElementsAre(Pair(0, "1")));
  const MemoryBlocks memory = memoryOf(kMemnodes);
  ASSERT_TRUE(memory.count(1));
  EXPECT_GE(memory.at(1).at(0), 256 * kMiB);
  uint64_t total = 0;
  for (const auto& [node, sizes] : memory) total += sizes.at(0);
  EXPECT_EQ(total, 512 * kMiB);
  // Both strict: each cell's memory where its memnode says.
  std::string xml = domainFile("two-cells-memnodes.xml");
  xml.replace(xml.find("mode='preferred'"), 16, "mode='strict'");
  ASSERT_EQ(hook("two-cells-memnodes", "release", "end", xml).exitCode, 0);
  ASSERT_EQ(hook("two-cells-memnodes", "prepare", "begin", xml).exitCode, 0);
  EXPECT_THAT(vm(kMemnodes).allocation().cell_nodes(), UnorderedElementsAre(Pair(0, "1"), Pair(1, "0")));
  EXPECT_EQ(memoryOf(kMemnodes), (MemoryBlocks{{0, {{0, 256 * kMiB}}}, {1, {{0, 256 * kMiB}}}}));
}

TEST_F(DomainNumaTest, AMemnodeThatCannotHoldItsCellIsRefusedWithTheNumbers) {
  std::string xml = domainFile("two-cells-memnodes.xml");
  // Both cells on node 1, 5 GiB each: node 1 has 8 GiB.
  for (const std::string from : {"nodeset='0'"}) xml.replace(xml.find(from), from.size(), "nodeset='1'");
  xml.replace(xml.find("mode='preferred'"), 16, "mode='strict'");
  for (int i = 0; i < 2; ++i) xml.replace(xml.find("memory='262144'"), 15, "memory='5242880'");
  xml.replace(xml.find("<memory unit='KiB'>524288"), 25, "<memory unit='KiB'>10485760");
  HookOutcome refused = hook("two-cells-memnodes", "prepare", "begin", xml);
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, HasSubstr("guest cell 1's <memnode> nodes 1 cannot provide 5120 MiB of memory; 2560 MiB "
                                     "are free there"));
  EXPECT_EQ(vmCount(), 0);
}

TEST_F(DomainNumaTest, WhereVriChoosesEachCellGetsOneNodeForItsVcpusAndMemoryAndTheMemnodesAreWrittenBack) {
  HookOutcome restored = hook("two-cells", "restore", "begin", domainFile("two-cells.xml"));
  ASSERT_EQ(restored.exitCode, 0) << restored.err;
  const v1::VmAllocation placed = vm(kTwoCells).allocation();
  ASSERT_EQ(placed.cell_nodes_size(), 2);
  const int node0 = std::stoi(placed.cell_nodes().at(0)), node1 = std::stoi(placed.cell_nodes().at(1));
  const std::map<int, int> nodes = vcpuNodes(placed);
  EXPECT_EQ(nodes, (std::map<int, int>{{0, node0}, {1, node0}, {2, node1}, {3, node1}}));
  ASSERT_NE(node0, node1);  // three CPUs are free on node 0 (CPU 0 is reserved), four on node 1
  EXPECT_EQ(memoryOf(kTwoCells), (MemoryBlocks{{node0, {{0, 256 * kMiB}}}, {node1, {{0, 256 * kMiB}}}}));
  // The printed definition binds each cell where VRI put it, and libvirt takes it.
  auto printed = parseDomainXml(restored.out);
  ASSERT_TRUE(printed.ok()) << printed.error().message();
  ASSERT_EQ(printed->memnodes.size(), 2u) << restored.out;
  EXPECT_EQ(printed->memnodes.at(0).nodeset.format(), placed.cell_nodes().at(0));
  EXPECT_EQ(printed->memnodes.at(1).nodeset.format(), placed.cell_nodes().at(1));
  EXPECT_EQ(libvirtRefusal(restored.out), "");
  // libvirt's next step, prepare with that definition: the same VM, once.
  HookOutcome prepared = hook("two-cells", "prepare", "begin", restored.out);
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  EXPECT_EQ(vmCount(), 1);
}

TEST_F(DomainNumaTest, APlainStartWithoutMemnodesClaimsNoPerCellAlignment) {
  HookOutcome prepared = hook("two-cells", "prepare", "begin", domainFile("two-cells.xml"));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  const v1::VmAllocation placed = vm(kTwoCells).allocation();
  EXPECT_EQ(placed.cell_nodes_size(), 0);
  uint64_t total = 0;
  for (const auto& [node, resources] : memoryOf(kTwoCells)) total += resources.at(0);
  EXPECT_EQ(total, 512 * kMiB);
  EXPECT_EQ(*CpuSet::parse(placed.cpuset_mems()), NumaMemory::mems(memoryOf(kTwoCells)));
}

TEST_F(DomainNumaTest, EachCellAndMemoryDeviceIsAccountedAtItsOwnPageSizeOnItsNode) {
  // Cell 0: 1 GiB of 1 GiB pages on node 0; cell 1: 256 MiB of 2 MiB pages on node 1, and a
  // 256 MiB dimm in cell 1 with 2 MiB pages.
  HookOutcome prepared = hook("mixed-pages", "prepare", "begin", domainFile("mixed-pages.xml"));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  EXPECT_EQ(memoryOf(kMixedPages), (MemoryBlocks{{0, {{kGiB, kGiB}}}, {1, {{2 * kMiB, 512 * kMiB}}}}));
  EXPECT_EQ(vm(kMixedPages).allocation().cpuset_mems(), "0-1");
  // Node 1's 2 MiB pages are all taken now.
  const std::string second = std::string(domainFile("mixed-pages.xml"))
                                 .replace(domainFile("mixed-pages.xml").find("4a63"), 4, "4a65")
                                 .replace(domainFile("mixed-pages.xml").find("mixed-pages"), 11, "more-pages");
  HookOutcome refused = hook("more-pages", "prepare", "begin", second);
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, HasSubstr("cannot provide"));
}

TEST_F(DomainNumaTest, TheSystemPageSizeIsOrdinaryMemory) {
  // <page size='4' unit='KiB'/> with a strict numatune on node 1: regular memory, bound to node 1.
  HookOutcome prepared = hook("system-pages", "prepare", "begin", domainFile("system-pages.xml"));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  EXPECT_EQ(memoryOf(kSystemPages), (MemoryBlocks{{1, {{0, 256 * kMiB}}}}));
  EXPECT_EQ(vm(kSystemPages).spec().hugepage_size(), 0u);
}

// A two-cell dedicated domain of 512 MiB a cell, with `numatune`, `backing` and `devices` put in.
std::string twoCells(const std::string& numatune, const std::string& backing = "", const std::string& devices = "",
                     uint64_t memoryKiB = 1048576) {
  return "<domain type='qemu'><name>corpus</name><uuid>5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a70</uuid>"
         "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='dedicated'/></vri:domain></metadata>"
         "<memory unit='KiB'>" +
         std::to_string(memoryKiB) + "</memory><vcpu placement='static'>2</vcpu>" + numatune + backing +
         "<cpu><numa><cell id='0' cpus='0' memory='524288' unit='KiB'/>"
         "<cell id='1' cpus='1' memory='524288' unit='KiB'/></numa></cpu><devices>" +
         devices + "</devices></domain>";
}
constexpr char kCorpus[] = "5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a70";

TEST_F(DomainNumaTest, AMemoryDevicesNodemaskIsTheDevicesAloneNotItsCellsMemnode) {
  const std::string dimm =
      "<memory model='dimm'><source><nodemask>1</nodemask></source>"
      "<target><size unit='KiB'>262144</size><node>0</node></target></memory>";
  const std::string xml =
      twoCells("<numatune><memnode cellid='0' mode='strict' nodeset='0'/></numatune>", "", dimm, 1048576 + 262144);
  ASSERT_EQ(hook("corpus", "prepare", "begin", xml).exitCode, 0);
  // Written back at restore as <memnode cellid='0' nodeset='0'>, not 0-1.
  EXPECT_EQ(vm(kCorpus).allocation().cell_nodes().at(0), "0");
  EXPECT_EQ(memoryOf(kCorpus).at(1).at(0), 256 * kMiB);  // the DIMM, on its nodemask's node
}

TEST_F(DomainNumaTest, ACellNoPageNamesIsOrdinaryMemory) {
  // Every <page> names cells: cell 1 is backed by ordinary memory, as libvirt backs it.
  const std::string xml =
      twoCells("", "<memoryBacking><hugepages><page size='2048' unit='KiB' nodeset='0'/></hugepages></memoryBacking>");
  HookOutcome prepared = hook("corpus", "prepare", "begin", xml);
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  uint64_t huge = 0, regular = 0;
  for (const auto& [node, sizes] : memoryOf(kCorpus)) {
    for (const auto& [size, bytes] : sizes) (size == 0 ? regular : huge) += bytes;
  }
  EXPECT_EQ(huge, 512 * kMiB);
  EXPECT_EQ(regular, 512 * kMiB);
}

TEST_F(DomainNumaTest, FileBackedMemoryDevicesTakeNoRam) {
  const std::string nvdimm =
      "<memory model='nvdimm'><source><path>/var/lib/nvdimm.img</path></source>"
      "<target><size unit='KiB'>524288</size><node>0</node></target></memory>"
      "<memory model='virtio-pmem' access='shared'><source><path>/var/lib/pmem.img</path></source>"
      "<target><size unit='KiB'>524288</size></target></memory>";
  HookOutcome prepared = hook("corpus", "prepare", "begin", twoCells("", "", nvdimm, 2097152));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  uint64_t total = 0;
  for (const auto& [node, sizes] : memoryOf(kCorpus)) {
    for (const auto& [size, bytes] : sizes) total += bytes;
  }
  EXPECT_EQ(total, 1024 * kMiB);  // the two cells; the files are not RAM
}

TEST_F(DomainNumaTest, NodesAreReadAsLibvirtReadsThemAndNodesTheHostLacksAreRefused) {
  // "^N" excludes, as virBitmapParse reads it.
  ASSERT_EQ(
      hook("corpus", "prepare", "begin", twoCells("<numatune><memory mode='strict' nodeset='0-1,^0'/></numatune>"))
          .exitCode,
      0);
  EXPECT_EQ(vm(kCorpus).allocation().cpuset_mems(), "1");
  ASSERT_EQ(hook("corpus", "release", "end", twoCells("")).exitCode, 0);
  // This host has nodes 0 and 1.
  HookOutcome refused =
      hook("corpus", "prepare", "begin", twoCells("<numatune><memory mode='strict' nodeset='0-7'/></numatune>"));
  EXPECT_EQ(refused.exitCode, 1);
  EXPECT_THAT(refused.err, HasSubstr("this host has no NUMA node 2"));
  EXPECT_EQ(vmCount(), 0);
}

// Each read as libvirt's memory code reads it: a guest without cells is cell 0 to <page nodeset>, a
// dimm's <source><path> is ignored (its memory is RAM), and an SGX enclave page cache is no RAM at all.
TEST_F(DomainNumaTest, PagesDimmsAndEnclavesAreBookedAsLibvirtBacksThem) {
  const std::string one_cell_less =
      "<domain type='qemu'><name>corpus</name><uuid>5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a70</uuid>"
      "<memory unit='KiB'>524288</memory><vcpu>1</vcpu>"
      "<memoryBacking><hugepages><page size='2048' unit='KiB' nodeset='0'/></hugepages></memoryBacking></domain>";
  HookOutcome prepared = hook("corpus", "prepare", "begin", one_cell_less);
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  uint64_t huge = 0, regular = 0;
  for (const auto& [node, sizes] : memoryOf(kCorpus)) {
    for (const auto& [size, bytes] : sizes) (size == 0 ? regular : huge) += bytes;
  }
  EXPECT_EQ(huge, 512 * kMiB);
  EXPECT_EQ(regular, 0u);
  ASSERT_EQ(hook("corpus", "release", "end", one_cell_less).exitCode, 0);

  const std::string devices =
      "<memory model='dimm'><source><path>/var/lib/ignored.img</path></source>"
      "<target><size unit='KiB'>262144</size><node>1</node></target></memory>"
      "<memory model='sgx-epc'><target><size unit='KiB'>65536</size><node>0</node></target></memory>";
  prepared = hook("corpus", "prepare", "begin", twoCells("", "", devices, 1048576 + 262144));
  ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
  uint64_t total = 0;
  for (const auto& [node, sizes] : memoryOf(kCorpus)) {
    for (const auto& [size, bytes] : sizes) total += bytes;
  }
  EXPECT_EQ(total, 1024 * kMiB + 256 * kMiB);  // the two cells and the dimm; the enclave is not RAM
}

// A cell whose <memnode> only prefers its nodes, or that has none, is VRI's to place: not confined to
// the nodes the VM's other cells are bound to. Node 1's 2 MiB pages go to cell 0 (strict there); cell
// 1's come from node 0, which has them.
TEST_F(DomainNumaTest, ACellThatIsNotBoundIsPlacedWhereItsPagesAreFree) {
  const std::string backing = "<memoryBacking><hugepages><page size='2048' unit='KiB'/></hugepages></memoryBacking>";
  for (const std::string& cell1 : {std::string("<memnode cellid='1' mode='preferred' nodeset='1'/>"), std::string()})
    for (const char* policy : {"dedicated", "shared"}) {
      std::string xml =
          twoCells("<numatune><memnode cellid='0' mode='strict' nodeset='1'/>" + cell1 + "</numatune>", backing);
      xml.replace(xml.find("dedicated"), 9, policy);
      HookOutcome prepared = hook("corpus", "prepare", "begin", xml);
      ASSERT_EQ(prepared.exitCode, 0) << prepared.err;
      EXPECT_EQ(memoryOf(kCorpus), (MemoryBlocks{{0, {{2 * kMiB, 512 * kMiB}}}, {1, {{2 * kMiB, 512 * kMiB}}}}));
      ASSERT_EQ(hook("corpus", "release", "end", xml).exitCode, 0);
    }
}

}  // namespace
}  // namespace vri
