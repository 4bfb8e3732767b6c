#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/libvirt_syntax.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/vm_request.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Real `virsh dumpxml` output from libvirt 9.0 (tests/data/domains).
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(VRI_TEST_DATA_DIR) + "/domains/" + name);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

std::string minimal(const std::string& inside, const std::string& name = "vm1") {
  return "<domain type='qemu'><name>" + name +
         "</name><uuid>4B0C1E2A-6F55-4F0E-9A7E-3C1D2E3F4A5D</uuid><memory unit='GiB'>1</memory>" + inside + "</domain>";
}

TEST(DomainXmlTest, ReadsADefinedDomainAsVirshDumpsIt) {
  auto domain = parseDomainXml(fixture("defined-dedicated.xml"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_EQ(domain->name, "vri-test-fixture");
  EXPECT_EQ(domain->uuid, "4b0c1e2a-6f55-4f0e-9a7e-3c1d2e3f4a5b");
  EXPECT_FALSE(domain->id.has_value());
  EXPECT_EQ(domain->maxVcpus, 4);
  EXPECT_EQ(domain->currentVcpus, 2);
  EXPECT_EQ(domain->cpuTopology.cores, 2);
  EXPECT_EQ(domain->cpuTopology.threads, 2);
  EXPECT_EQ(domain->memoryBytes, 128ULL << 20);
  EXPECT_EQ(domain->currentMemoryBytes, 128ULL << 20);
  EXPECT_EQ(domain->iothreads, 1);
  EXPECT_EQ(domain->cputune.vcpupins.at(0).format(), "0");
  EXPECT_EQ(domain->cputune.vcpupins.at(1).format(), "1");
  EXPECT_EQ(domain->cputune.emulatorpin->format(), "0-1");
  EXPECT_EQ(domain->cputune.iothreadpins.at(1).format(), "1");
  EXPECT_EQ(domain->cputune.shares, 512u);
  EXPECT_EQ(domain->cputune.period, 100000u);
  EXPECT_EQ(domain->cputune.quota, 50000);
  ASSERT_TRUE(domain->numatune.has_value());
  EXPECT_EQ(domain->numatune->mode, "strict");
  EXPECT_EQ(domain->numatune->nodeset.format(), "0");
  EXPECT_EQ(domain->vri.cpuPolicy, "dedicated");
  EXPECT_EQ(domain->vri.threadPolicy, "isolate");
  EXPECT_EQ(domain->vri.emulatorThreads, "isolate");
  EXPECT_TRUE(domain->hasUserPins());  // pins without VRI's mark are the user's
}

TEST(DomainXmlTest, ReadsARunningDomainsLiveXml) {
  auto domain = parseDomainXml(fixture("running-shared.xml"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_EQ(domain->id, 1);
  EXPECT_EQ(domain->currentVcpus, 1);
  EXPECT_EQ(domain->memoryBytes, 96ULL << 20);
  EXPECT_FALSE(domain->hasUserPins());
  auto request = vmRequestFromDomain(*domain);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->cpu_policy(), v1::SHARED);
  EXPECT_EQ(request->vcpus(), 1);
  EXPECT_EQ(request->memory_bytes(), 96ULL << 20);
  EXPECT_TRUE(request->pinned_vcpu_cpus().empty());
}

TEST(DomainXmlTest, UnitsHugepagesAndNumatune) {
  auto domain =
      parseDomainXml(minimal("<currentMemory unit='MiB'>512</currentMemory><vcpu>2</vcpu>"
                             "<memoryBacking><hugepages><page size='1' unit='GiB'/></hugepages></memoryBacking>"
                             "<numatune><memory mode='strict' nodeset='1'/></numatune>"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_EQ(domain->uuid, "4b0c1e2a-6f55-4f0e-9a7e-3c1d2e3f4a5d");  // lower case
  EXPECT_EQ(domain->memoryBytes, 1ULL << 30);
  EXPECT_EQ(domain->currentMemoryBytes, 512ULL << 20);
  ASSERT_EQ(domain->hugepagePages.size(), 1u);
  EXPECT_EQ(domain->hugepagePages[0].sizeBytes, 1ULL << 30);
  auto request = vmRequestFromDomain(*domain);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->memory_bytes(), 1ULL << 30);  // the hard request is <memory>
  EXPECT_EQ(request->hugepage_size(), 1ULL << 30);
  EXPECT_THAT(request->strict_numa_nodes(), ElementsAre(1));

  domain = parseDomainXml(minimal("<memoryBacking><hugepages/></memoryBacking>"));
  ASSERT_TRUE(domain.ok());
  EXPECT_EQ(vmRequestFromDomain(*domain)->hugepage_size(), kDefaultHugepageBytes);
}

TEST(DomainXmlTest, PolicyComesFromVriMetadataAndNoTuningIsShared) {
  const std::string metadata =
      "<vcpu>4</vcpu><metadata><x:domain xmlns:x='urn:vri:domain:1'>"
      "<x:cpu policy='mixed' dedicated-vcpus='1-2' thread-policy='require' emulator-threads='isolate' "
      "iothreads='isolate'/></x:domain></metadata><iothreads>2</iothreads>";
  auto domain = parseDomainXml(minimal(metadata));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  auto request = vmRequestFromDomain(*domain);
  ASSERT_TRUE(request.ok()) << request.error().message();
  EXPECT_EQ(request->cpu_policy(), v1::MIXED);
  EXPECT_THAT(request->mixed_dedicated_vcpus(), ElementsAre(1, 2));
  EXPECT_EQ(request->thread_policy(), v1::REQUIRE);
  EXPECT_TRUE(request->isolate_emulator());
  EXPECT_TRUE(request->isolate_iothreads());
  EXPECT_EQ(request->iothreads(), 2);

  // Another namespace's <domain> element is not VRI's.
  auto other = parseDomainXml(
      minimal("<metadata><x:domain xmlns:x='urn:someone:else'><x:cpu policy='dedicated'/></x:domain></metadata>"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(vmRequestFromDomain(*other)->cpu_policy(), v1::SHARED);

  EXPECT_THAT(parseDomainXml(minimal("<metadata><v:domain xmlns:v='urn:vri:domain:1'><v:cpu policy='fast'/>"
                                     "</v:domain></metadata>"))
                  .error()
                  .message(),
              HasSubstr("<vri:cpu policy=\"fast\">: must be shared|dedicated|mixed"));
}

TEST(DomainXmlTest, UserPinsAreExactAndMultiCpuPinsAreRefusedWithAWayOut) {
  auto domain =
      parseDomainXml(minimal("<vcpu>3</vcpu><cputune><vcpupin vcpu='0' cpuset='4'/>"
                             "<vcpupin vcpu='2' cpuset='6'/></cputune>"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  auto request = vmRequestFromDomain(*domain);
  ASSERT_TRUE(request.ok());
  EXPECT_THAT(request->pinned_vcpu_cpus(), ElementsAre(4, -1, 6));

  domain = parseDomainXml(minimal("<vcpu>1</vcpu><cputune><vcpupin vcpu='0' cpuset='2-3'/></cputune>"));
  ASSERT_TRUE(domain.ok());
  EXPECT_THAT(vmRequestFromDomain(*domain).error().message(), HasSubstr("pin each vCPU to one CPU"));
}

TEST(DomainXmlTest, PinsVriWroteAreReadAsVris) {
  const std::string defined = fixture("defined-dedicated.xml");
  VmPins pins{{{0, CpuSet{1}}, {1, CpuSet{1}}}, CpuSet{0}, {{1, CpuSet{0}}}, CpuSet{0}, {}, {}, false, {}};
  auto rewritten = writeVriPins(defined, pins);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
  auto domain = parseDomainXml(*rewritten);
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_TRUE(domain->pinsAreVris());
  EXPECT_FALSE(domain->hasUserPins());
  EXPECT_EQ(*domain->vri.placement, placementMark(pins));
  EXPECT_EQ(domain->cputune.vcpupins.at(0).format(), "1");
  EXPECT_EQ(domain->cputune.emulatorpin->format(), "0");
  EXPECT_EQ(domain->cputune.shares, 512u);  // the rest of <cputune> is kept
  EXPECT_EQ(domain->vri.cpuPolicy, "dedicated");
  // The request is the policy's, as before the rewrite: the same VM asks the same thing.
  auto request = vmRequestFromDomain(*domain);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(request->cpu_policy(), v1::DEDICATED);
  EXPECT_TRUE(request->pinned_vcpu_cpus().empty());
  EXPECT_THAT(*rewritten, HasSubstr("<model fallback=\"forbid\">qemu64</model>"));  // untouched elsewhere

  // Rewriting twice gives one placement element, not two.
  auto twice = writeVriPins(*rewritten, pins);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(*twice, *rewritten);

  // A user who edits one of VRI's pins makes them all the user's.
  std::string edited = *rewritten;
  const std::string from = "<vcpupin vcpu=\"0\" cpuset=\"1\"/>";
  ASSERT_NE(edited.find(from), std::string::npos) << edited;
  edited.replace(edited.find(from), from.size(), "<vcpupin vcpu=\"0\" cpuset=\"0\"/>");
  domain = parseDomainXml(edited);
  ASSERT_TRUE(domain.ok());
  EXPECT_TRUE(domain->hasUserPins());
}

// Threads on the shared pool are recorded as such: the pool moves without the record being rewritten.
TEST(DomainXmlTest, ASharedThreadsPinReadsAsVrisWhateverThePoolIsNow) {
  VmPins pins{{{0, CpuSet{1}}, {1, CpuSet{0, 2}}}, CpuSet{0, 2}, {}, {}, {}, CpuSet{1}, true, {}};
  auto rewritten = writeVriPins(fixture("defined-dedicated.xml"), pins);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
  EXPECT_THAT(*rewritten, HasSubstr("<vri:vcpupin vcpu=\"1\" pool=\"shared\"/>"));
  EXPECT_THAT(*rewritten, HasSubstr("<vri:emulatorpin pool=\"shared\"/>"));
  EXPECT_THAT(*rewritten, HasSubstr("<vcpupin vcpu=\"1\" cpuset=\"0,2\"/>"));
  // The pool has grown since: libvirt's pins read 0,2-3 now.
  std::string moved = *rewritten;
  for (const std::string from : {"<vcpupin vcpu=\"1\" cpuset=\"0,2\"/>", "<emulatorpin cpuset=\"0,2\"/>"}) {
    const size_t at = moved.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    moved.replace(at, from.size(), std::string(from).replace(from.find("0,2"), 3, "0,2-3"));
  }
  auto domain = parseDomainXml(moved);
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_TRUE(domain->pinsAreVris());
  EXPECT_EQ(domain->vri.placement->vcpupins.at(1), CpuSet{});
  // A dedicated vCPU's pin edited by hand: the user's.
  const std::string edited = std::string(moved).replace(moved.find("<vcpupin vcpu=\"0\" cpuset=\"1\"/>"), 30,
                                                        "<vcpupin vcpu=\"0\" cpuset=\"3\"/>");
  domain = parseDomainXml(edited);
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_FALSE(domain->pinsAreVris());
  // libvirt's own form of VRI's element (vriMetadataElement, as virDomainSetMetadata takes it).
  EXPECT_EQ(vriMetadataElement({"mixed", CpuSet{0}, "prefer", "shared", "shared", placementMark(pins), ""}),
            "<domain><cpu policy='mixed' dedicated-vcpus='0' thread-policy='prefer' emulator-threads='shared' "
            "iothreads='shared'/><placement><vcpupin vcpu='0' cpuset='1'/><vcpupin vcpu='1' pool='shared'/>"
            "<emulatorpin pool='shared'/></placement></domain>");
}

TEST(DomainXmlTest, HostileAndBrokenXmlIsRefusedWithAReason) {
  struct Case {
    std::string xml;
    std::string reason;
  };
  std::string deep = "<domain>";
  for (int i = 0; i < 5000; ++i) deep += "<a>";
  std::string huge = minimal("<description>" + std::string(2 << 20, 'x') + "</description>");
  const std::vector<Case> cases = {
      {"", "malformed XML"},
      {minimal("").substr(0, 60), "malformed XML"},
      {"<domain><name>a</name>", "malformed XML"},
      {"<?xml version='1.0'?><!DOCTYPE lolz [<!ENTITY lol 'lol'><!ENTITY lol2 '&lol;&lol;&lol;'>]>"
       "<domain><name>&lol2;</name></domain>",
       "DOCTYPE or entity declaration"},
      {"<!doctype domain SYSTEM 'file:///etc/passwd'><domain/>", "DOCTYPE"},
      {deep, "malformed XML"},
      {huge, "larger than the 1048576 bytes accepted"},
      {std::string("<domain>\0</domain>", 18), "NUL byte"},
      {"<network><name>x</name></network>", "not <domain>"},
      {minimal("", "../../etc"), "cannot be a domain name"},
      {minimal("", "a/b"), "cannot be a domain name"},
      {minimal("", ".."), "cannot be a domain name"},
      {"<domain><name>x</name><uuid>not-a-uuid</uuid><memory>1</memory></domain>", "not a UUID"},
      {"<domain><name>x</name><memory>1</memory></domain>", "no <uuid>"},
      {minimal("<vcpu>0</vcpu>"), "out of range"},
      {minimal("<vcpu current='5'>4</vcpu>"), "out of range"},
      {minimal("<vcpu>99999999999999999999</vcpu>"), "not a number"},
      {minimal("<vcpu>2</vcpu><cputune><vcpupin vcpu='0' cpuset='3-1'/></cputune>"), "<vcpupin vcpu='0'>"},
      {minimal("<vcpu>2</vcpu><cputune><vcpupin vcpu='7' cpuset='1'/></cputune>"), "the domain has 2 vCPUs"},
      {minimal("<vcpu>2</vcpu><cputune><vcpupin vcpu='0' cpuset='1'/><vcpupin vcpu='0' cpuset='1'/></cputune>"),
       "pinned twice"},
      {minimal("<memoryBacking><hugepages><page size='3' unit='KiB'/></hugepages></memoryBacking>"), "not a page size"},
      {"<domain><name>x</name><uuid>4b0c1e2a-6f55-4f0e-9a7e-3c1d2e3f4a5d</uuid><memory unit='parsec'>1</memory>"
       "</domain>",
       "unknown unit"},
      {minimal("<numatune><memory mode='sometimes' nodeset='0'/></numatune>"), "unknown mode"},
  };
  for (const auto& c : cases) {
    auto parsed = parseDomainXml(c.xml);
    ASSERT_FALSE(parsed.ok()) << c.xml.substr(0, 200);
    EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message(), HasSubstr(c.reason)) << c.xml.substr(0, 200);
  }
}

// Sizes and counts past what any host holds are refused by the hook, before
// any sum: a <memory> of 2^64-1 KiB, 4097 TiB, a vCPU count past 32 bits, and
// memory devices whose sum would wrap.
TEST(DomainXmlTest, AmountsBeyondAnyHostAreRefusedBeforeTheyAreSummed) {
  const auto withMemory = [](const std::string& memory, const std::string& more = "") {
    return "<domain><name>big</name><uuid>4b0c1e2a-6f55-4f0e-9a7e-3c1d2e3f4a5d</uuid>" + memory + more + "</domain>";
  };
  for (const std::string& memory :
       {std::string("<memory unit='KiB'>18446744073709551615</memory>"),
        std::string("<memory unit='TiB'>4097</memory>"), std::string("<memory unit='b'>4503599627370497</memory>")}) {
    auto parsed = parseDomainXml(withMemory(memory));
    ASSERT_FALSE(parsed.ok()) << memory;
    EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(parsed.error().message(), HasSubstr("beyond what any host holds")) << memory;
  }
  EXPECT_FALSE(parseDomainXml(minimal("<vcpu>4294967297</vcpu>")).ok());
  // Two 4 PiB DIMMs beside 4 PiB of <memory>: each fits the ceiling, their sum does not.
  const std::string dimm = "<memory model='dimm'><target><size unit='TiB'>4096</size><node>0</node></target></memory>";
  auto domain = parseDomainXml(withMemory("<memory unit='TiB'>4096</memory>",
                                          "<cpu><numa><cell id='0' cpus='0' memory='1' unit='TiB'/></numa></cpu>"
                                          "<devices>" +
                                              dimm + dimm + "</devices>"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  auto request = vmRequestFromDomain(*domain);
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.error().message(), HasSubstr("beyond what any"));
}

// A DOCTYPE in another encoding has no ASCII "<!DOCTYPE" in its bytes (UTF-7 spells '!' as "+ACE-"):
// refused after libxml2 decodes it, so an entity it declares is never expanded into the VM's name.
// (UTF-16 and UTF-32 hold NUL bytes, which are refused before parsing.)
TEST(DomainXmlTest, ADoctypeInAnyEncodingIsRefused) {
  const auto utf7 = [](std::string body) {
    for (size_t at; (at = body.find('!')) != std::string::npos;) body.replace(at, 1, "+ACE-");
    return "<?xml version='1.0' encoding='UTF-7'?>" + body;
  };
  auto parsed =
      parseDomainXml(utf7("<!DOCTYPE domain [<!ENTITY n 'hidden'>]><domain><name>&n;</name>"
                          "<uuid>4b0c1e2a-6f55-4f0e-9a7e-3c1d2e3f4a5d</uuid><memory>1024</memory></domain>"));
  ASSERT_FALSE(parsed.ok()) << "admitted as " << parsed->name;
  EXPECT_THAT(parsed.error().message(), HasSubstr("DOCTYPE or entity declaration is refused"));
  // The same document without its DTD is read: the encoding alone is not refused.
  auto read = parseDomainXml(utf7(minimal("", "utf7vm")));
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->name, "utf7vm");
}

TEST(DomainXmlTest, EntityReferencesAreNotExpanded) {
  // Without a DOCTYPE only the five predefined entities exist; anything else is an error, not an expansion.
  EXPECT_FALSE(parseDomainXml(minimal("<description>&xxe;</description>")).ok());
  auto domain = parseDomainXml(minimal("", "a&amp;b"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_EQ(domain->name, "a&b");
}

std::string withVcpus(const std::string& vcpu, const std::string& more) {
  return "<domain><name>d</name><uuid>5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a51</uuid><memory>1024</memory>" + vcpu + more +
         "</domain>";
}

TEST(DomainXmlIdsTest, OnlineVcpusAreTheEnabledOnesAndIothreadIdsAreLibvirts) {
  auto domain = parseDomainXml(withVcpus("<vcpu current='2'>4</vcpu>",
                                         "<vcpus><vcpu id='0' enabled='yes'/><vcpu id='1' enabled='no'/>"
                                         "<vcpu id='2' enabled='no'/><vcpu id='3' enabled='yes'/></vcpus>"
                                         "<iothreads>3</iothreads><iothreadids><iothread id='4'/></iothreadids>"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_THAT(domain->onlineVcpus, ElementsAre(0, 3));
  EXPECT_THAT(domain->iothreadIds, ElementsAre(1, 2, 4));  // the unnamed ones numbered from 1 past those taken
  auto plain = parseDomainXml(withVcpus("<vcpu current='2'>4</vcpu>", "<iothreads>2</iothreads>"));
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->onlineVcpus, ElementsAre(0, 1));
  EXPECT_THAT(plain->iothreadIds, ElementsAre(1, 2));

  EXPECT_THAT(parseDomainXml(withVcpus("<vcpu current='2'>4</vcpu>", "<vcpus><vcpu id='0' enabled='yes'/></vcpus>"))
                  .error()
                  .message(),
              HasSubstr("1 vCPUs are enabled and <vcpu current> says 2"));
  EXPECT_THAT(
      parseDomainXml(withVcpus("<vcpu>2</vcpu>", "<vcpus><vcpu id='2' enabled='yes'/></vcpus>")).error().message(),
      HasSubstr("the domain has 2 vCPUs"));
  EXPECT_THAT(parseDomainXml(withVcpus("<vcpu>2</vcpu>",
                                       "<iothreads>1</iothreads><iothreadids><iothread id='0'/>"
                                       "</iothreadids>"))
                  .error()
                  .message(),
              HasSubstr("iothread id 0 must be positive"));
}

TEST(DomainXmlIdsTest, APinToACpuNoHostHasSaysSo) {
  auto domain = parseDomainXml(withVcpus("<vcpu>1</vcpu>", "<cputune><vcpupin vcpu='0' cpuset='16383'/></cputune>"));
  ASSERT_FALSE(domain.ok());
  EXPECT_THAT(domain.error().message(), HasSubstr("CPU 16383 does not exist on this host"));
}

TEST(DomainXmlIdsTest, VrisNumatuneKeepsTheDomainsModeAndWritesItsMemnodes) {
  const std::string xml = withVcpus("<vcpu>2</vcpu>",
                                    "<numatune><memory mode='restrictive' nodeset='0-1'/></numatune>"
                                    "<cpu><numa><cell id='0' cpus='0' memory='512'/><cell id='1' cpus='1' "
                                    "memory='512'/></numa></cpu>");
  VmPins pins{{{0, CpuSet{2}}, {1, CpuSet{5}}}, CpuSet{0}, {},    CpuSet{0, 1},
              {{0, CpuSet{0}}, {1, CpuSet{1}}}, {},        false, {}};
  auto rewritten = writeVriPins(xml, pins);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
  auto domain = parseDomainXml(*rewritten);
  ASSERT_TRUE(domain.ok()) << domain.error().message() << *rewritten;
  EXPECT_EQ(domain->numatune->mode, "restrictive");
  EXPECT_EQ(domain->memnodes.at(0).nodeset.format(), "0");
  EXPECT_EQ(domain->memnodes.at(1).nodeset.format(), "1");
  // Under restrictive <memory>, libvirt refuses any other memnode mode.
  EXPECT_EQ(domain->memnodes.at(1).mode, "restrictive");
}

// Preferred memory over several nodes holds one node to the kernel (MPOL_PREFERRED) before libvirt
// 9.3: VRI writes what it means instead, the memory confined to the nodes it booked (restrictive),
// and keeps preferred where one node is named. The node suite restores such a VM in the guest.
TEST(DomainXmlIdsTest, PreferredMemoryOnSeveralNodesIsWrittenRestrictive) {
  const std::string cells =
      "<cpu><numa><cell id='0' cpus='0' memory='512'/><cell id='1' cpus='1' memory='512'/></numa></cpu>";
  const std::string xml = withVcpus("<vcpu>2</vcpu>",
                                    "<numatune><memory mode='preferred' nodeset='0'/>"
                                    "<memnode cellid='1' mode='preferred' nodeset='1'/></numatune>" +
                                        cells);
  VmPins pins{{{0, CpuSet{2}}, {1, CpuSet{5}}},    CpuSet{0}, {},    CpuSet{0, 1},
              {{0, CpuSet{0}}, {1, CpuSet{0, 1}}}, {},        false, {}};
  auto rewritten = writeVriPins(xml, pins);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
  auto domain = parseDomainXml(*rewritten);
  ASSERT_TRUE(domain.ok()) << domain.error().message() << *rewritten;
  EXPECT_EQ(domain->numatune->mode, "restrictive");
  EXPECT_EQ(domain->numatune->nodeset.format(), "0-1");
  for (const auto& [cell, memnode] : domain->memnodes) EXPECT_EQ(memnode.mode, "restrictive") << cell;

  pins.mems = CpuSet{1};
  pins.cellNodes = {{0, CpuSet{1}}, {1, CpuSet{1}}};
  auto one_node = parseDomainXml(*writeVriPins(xml, pins));
  ASSERT_TRUE(one_node.ok());
  EXPECT_EQ(one_node->numatune->mode, "preferred");
  EXPECT_EQ(one_node->numatune->nodeset.format(), "1");
  EXPECT_EQ(one_node->memnodes.at(1).mode, "preferred");
}

// A <memnode> whose cellid is spelled "+0" or "01" is cell 0's or 1's to the parser, and so to the
// writer: VRI's nodes go into it, not into a second <memnode> that makes the definition invalid
// (found by domain_xml_fuzz).
TEST(DomainXmlIdsTest, AMemnodeIsFoundByItsCellNumberHoweverItsIdIsSpelled) {
  const std::string xml = withVcpus("<vcpu>2</vcpu>",
                                    "<numatune><memnode cellid='+0' mode='strict' nodeset='1'/>"
                                    "<memnode cellid='01' mode='strict' nodeset='0'/></numatune>"
                                    "<cpu><numa><cell id='0' cpus='0' memory='512'/><cell id='1' cpus='1' "
                                    "memory='512'/></numa></cpu>");
  ASSERT_TRUE(parseDomainXml(xml).ok());
  VmPins pins{{{0, CpuSet{2}}, {1, CpuSet{5}}}, CpuSet{0}, {},    CpuSet{0, 1},
              {{0, CpuSet{0}}, {1, CpuSet{1}}}, {},        false, {}};
  auto rewritten = writeVriPins(xml, pins);
  ASSERT_TRUE(rewritten.ok()) << rewritten.error().message();
  auto domain = parseDomainXml(*rewritten);
  ASSERT_TRUE(domain.ok()) << domain.error().message() << *rewritten;
  EXPECT_EQ(domain->memnodes.size(), 2u);
  EXPECT_EQ(domain->memnodes.at(0).nodeset.format(), "0");
  EXPECT_EQ(domain->memnodes.at(1).nodeset.format(), "1");
}

// "^N" clears N from what the items before it set, as virBitmapParse reads the list left to right.
TEST(DomainXmlLibvirtSyntaxTest, ExclusionsApplyToWhatCameBeforeThem) {
  const auto nodesetOf = [](const std::string& nodeset) -> Result<std::string> {
    VRI_ASSIGN_OR_RETURN(DomainXml domain, parseDomainXml(minimal("<numatune><memory mode='strict' nodeset='" +
                                                                  nodeset + "'/></numatune>")));
    return domain.numatune->nodeset.format();
  };
  EXPECT_EQ(nodesetOf("0-3,^1").value(), "0,2-3");
  EXPECT_EQ(nodesetOf("^1,0-3").value(), "0-3");  // nothing to clear yet; 0-3 sets 1 again
  EXPECT_EQ(nodesetOf("^5,5").value(), "5");
  EXPECT_EQ(nodesetOf("5,^5,6").value(), "6");
  EXPECT_THAT(nodesetOf("1,^1").error().message(), HasSubstr("leaves nothing"));
}

// Ids are read as virXMLPropUInt reads them: "+1" and " 1" are 1, "-0" is refused.
TEST(DomainXmlLibvirtSyntaxTest, IdsAreSpelledAsLibvirtAcceptsThem) {
  const auto cells = "<cpu><numa><cell id='0' cpus='0' memory='512'/><cell id='1' cpus='1' memory='512'/></numa></cpu>";
  const auto memnode = [&](const std::string& cellid) {
    return parseDomainXml(withVcpus(
        "<vcpu>2</vcpu>", "<numatune><memnode cellid='" + cellid + "' mode='strict' nodeset='0'/></numatune>" + cells));
  };
  ASSERT_TRUE(memnode("+1").ok()) << memnode("+1").error().message();
  EXPECT_EQ(memnode("+1")->memnodes.count(1), 1u);
  ASSERT_TRUE(memnode(" 1").ok());
  EXPECT_EQ(memnode(" 1")->memnodes.count(1), 1u);
  EXPECT_THAT(memnode("-0").error().message(), HasSubstr("negative"));
  EXPECT_THAT(memnode("1 ").error().message(), HasSubstr("not a number"));
  EXPECT_THAT(memnode("++1").error().message(), HasSubstr("not a number"));
  EXPECT_THAT(memnode("4294967296").error().message(), HasSubstr("not a number"));
  EXPECT_TRUE(parseLibvirtUnsigned("4294967295", "id").ok());
}

TEST(DomainXmlLibvirtSyntaxTest, AnSgxEnclaveIsNotRamAndADimmsPathIsIgnored) {
  auto domain = parseDomainXml(
      minimal("<cpu><numa><cell id='0' cpus='0' memory='1048576'/></numa></cpu><devices>"
              "<memory model='sgx-epc'><target><size unit='KiB'>65536</size><node>0</node></target></memory>"
              "<memory model='dimm'><source><path>/dev/null</path></source><target><size unit='KiB'>262144</size>"
              "<node>0</node></target></memory></devices>"));
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  ASSERT_EQ(domain->memoryDevices.size(), 1u);  // the sgx-epc device is not memory VRI books
  EXPECT_EQ(domain->memoryDevices[0].model, "dimm");
  EXPECT_FALSE(domain->memoryDevices[0].fileBacked());
}

}  // namespace
}  // namespace vri
