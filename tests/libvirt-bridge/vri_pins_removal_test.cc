// VRI's placement taken out of a definition again (withoutVriPins): the domain
// asks for what it asked before VRI wrote its pins, and its own <numatune> is back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/vm_request.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string domain(const std::string& inside) {
  return "<domain type='qemu'><name>db</name><uuid>5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a61</uuid>"
         "<memory unit='MiB'>512</memory><vcpu>2</vcpu>" +
         inside +
         "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='dedicated'/></vri:domain></metadata>"
         "</domain>";
}

// What the domain asks of VRI, as the hook sends it.
std::string requestOf(const std::string& xml) {
  auto parsed = parseDomainXml(xml);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message() << "\n" << xml;
  if (!parsed.ok()) return "";
  auto request = vmRequestFromDomain(*parsed);
  EXPECT_TRUE(request.ok()) << request.error().message();
  return request.ok() ? request->DebugString() : "";
}

// Two placements in turn (a define, then a restore elsewhere), then the domain stops.
std::string placedTwiceThenTakenOut(const std::string& xml) {
  VmPins first{{{0, CpuSet{1}}, {1, CpuSet{2}}}, CpuSet{0}, {}, CpuSet{0}, {}, {}, false, {}};
  VmPins second{{{0, CpuSet{5}}, {1, CpuSet{6}}}, CpuSet{4}, {}, CpuSet{1}, {}, {}, false, {}};
  auto once = writeVriPins(xml, first);
  EXPECT_TRUE(once.ok()) << once.error().message();
  auto twice = writeVriPins(*once, second);
  EXPECT_TRUE(twice.ok()) << twice.error().message();
  EXPECT_THAT(*twice, HasSubstr("nodeset=\"1\""));
  auto read = parseDomainXml(*twice);
  EXPECT_TRUE(read.ok() && read->pinsAreVris());
  auto out = withoutVriPins(*twice);
  EXPECT_TRUE(out.ok()) << out.error().message();
  return out.ok() ? *out : "";
}

TEST(VriPinsRemovalTest, ADomainWithoutNumatuneAsksAgainWhatItAskedBefore) {
  const std::string xml = domain("<cputune><shares>512</shares></cputune>");
  const std::string out = placedTwiceThenTakenOut(xml);
  EXPECT_EQ(requestOf(out), requestOf(xml));
  auto read = parseDomainXml(out);
  ASSERT_TRUE(read.ok());
  EXPECT_TRUE(read->cputune.vcpupins.empty());
  EXPECT_FALSE(read->cputune.emulatorpin.has_value());
  EXPECT_EQ(read->cputune.shares, 512u);  // the rest of <cputune> stays
  EXPECT_FALSE(read->numatune.has_value());
  EXPECT_FALSE(read->vri.placement.has_value());
  EXPECT_EQ(read->vri.cpuPolicy, "dedicated");  // the domain's own request stays
  EXPECT_THAT(out, Not(HasSubstr("own-numatune")));
}

TEST(VriPinsRemovalTest, AnEmptiedCputuneGoesWithThePins) {
  const std::string out = placedTwiceThenTakenOut(domain(""));
  EXPECT_THAT(out, Not(HasSubstr("cputune")));
  EXPECT_THAT(out, Not(HasSubstr("numatune")));
}

TEST(VriPinsRemovalTest, TheDomainsOwnNumatuneComesBackAsItWas) {
  const std::string xml = domain(
      "<numatune><memory mode='preferred' nodeset='0' placement='static'/>"
      "<memnode cellid='1' mode='preferred' nodeset='1'/></numatune>"
      "<cpu><numa><cell id='0' cpus='0' memory='256' unit='MiB'/><cell id='1' cpus='1' memory='256' "
      "unit='MiB'/></numa></cpu>");
  const std::string out = placedTwiceThenTakenOut(xml);
  EXPECT_EQ(requestOf(out), requestOf(xml));
  auto read = parseDomainXml(out);
  ASSERT_TRUE(read.ok());
  ASSERT_TRUE(read->numatune.has_value());
  EXPECT_EQ(read->numatune->mode, "preferred");
  EXPECT_EQ(read->numatune->nodeset.format(), "0");
  EXPECT_EQ(read->memnodes.size(), 1u);
  EXPECT_EQ(read->memnodes.at(1).nodeset.format(), "1");
  EXPECT_THAT(out, HasSubstr("placement=\"static\""));
}

// A move with --config rewrites VRI's record through the metadata alone (as virDomainSetMetadata
// replaces the element): the record of the domain's own <numatune> is carried into it.
TEST(VriPinsRemovalTest, ARecordRewrittenThroughTheMetadataKeepsTheDomainsOwnNumatune) {
  const std::string xml = domain("<numatune><memory mode='preferred' nodeset='1'/></numatune>");
  VmPins pins{{{0, CpuSet{1}}, {1, CpuSet{2}}}, CpuSet{0}, {}, CpuSet{0}, {}, {}, false, {}};
  auto placed = writeVriPins(xml, pins);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  auto record = ownNumatuneRecordOf(*placed);
  ASSERT_TRUE(record.ok()) << record.error().message();
  EXPECT_THAT(*record, HasSubstr("<own-numatune><numatune><memory mode=\"preferred\" nodeset=\"1\"/>"));
  EXPECT_THAT(*record, Not(HasSubstr("vri:")));

  // The moved pins (as virDomainPinVcpuFlags writes them) and their record with it, where libvirt puts
  // the element: into VRI's namespace.
  VmPins moved{{{0, CpuSet{3}}, {1, CpuSet{2}}}, CpuSet{0}, {}, CpuSet{0}, {}, {}, false, {}};
  VriDomainMetadata metadata;
  metadata.cpuPolicy = "dedicated";
  metadata.placement = placementMark(moved);
  metadata.ownNumatuneRecord = *record;
  std::string element = vriMetadataElement(metadata);
  element.insert(std::string_view("<domain").size(), " xmlns='urn:vri:domain:1'");
  const size_t from = placed->find("<vri:domain"), to = placed->find("</vri:domain>") + 13;
  ASSERT_NE(from, std::string::npos);
  std::string rewritten = placed->substr(0, from) + element + placed->substr(to);
  const std::string old_pin = "<vcpupin vcpu=\"0\" cpuset=\"1\"/>";
  ASSERT_NE(rewritten.find(old_pin), std::string::npos) << rewritten;
  rewritten.replace(rewritten.find(old_pin), old_pin.size(), "<vcpupin vcpu=\"0\" cpuset=\"3\"/>");
  auto read = parseDomainXml(rewritten);
  ASSERT_TRUE(read.ok() && read->pinsAreVris()) << rewritten;

  auto out = withoutVriPins(rewritten);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(requestOf(*out), requestOf(xml));
  EXPECT_THAT(*out, HasSubstr("<numatune><memory mode=\"preferred\" nodeset=\"1\"/></numatune>"));
  // Without a record at all (a definition VRI never placed), nothing to carry.
  auto none = ownNumatuneRecordOf(xml);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
}

TEST(VriPinsRemovalTest, ADefinitionWithoutVrisPlacementIsRefused) {
  auto out = withoutVriPins(domain("<cputune><vcpupin vcpu='0' cpuset='1'/></cputune>"));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.error().message(), HasSubstr("no placement of VRI's"));
  EXPECT_FALSE(withoutVriPins("<domain").ok());
}

}  // namespace
}  // namespace vri
