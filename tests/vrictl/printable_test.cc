// What vrid answers made safe for the operator's terminal: control characters and broken UTF-8
// escaped in every string of a reply, at any depth; letters of any language kept.
#include "vrictl/printable.h"

#include <gtest/gtest.h>

#include "proto/vri.pb.h"

namespace vri::ctl {
namespace {

TEST(PrintableTest, ControlCharactersAndBrokenUtf8AreEscapedAndLettersKept) {
  EXPECT_EQ(printableText("web"), "web");
  EXPECT_EQ(printableText("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(printableText("a\nb\rc\td\x7f"), "a\\x0ab\\x0dc\\x09d\\x7f");
  EXPECT_EQ(printableText("\xc2\x9b"
                          "31m"),
            "\\xc2\\x9b31m");                                                        // C1 CSI
  EXPECT_EQ(printableText("caf\xc3\xa9 \xe6\x97\xa5"), "caf\xc3\xa9 \xe6\x97\xa5");  // é, 日
  EXPECT_EQ(printableText("\xff\xc3"), "\\xff\\xc3");           // not UTF-8, and a sequence cut short
  EXPECT_EQ(printableText("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // an overlong '/'
}

TEST(PrintableTest, EveryStringOfAReplyAtAnyDepthIsMadePrintable) {
  v1::TenantList list;
  v1::Tenant& tenant = *list.add_tenants();
  v1::PodInfo& pod = *tenant.mutable_pod();
  pod.set_name("default/\x1b]0;owned\x07");
  v1::ContainerInfo& container = *pod.add_containers();
  container.mutable_resources()->set_name("app\x1b[2J");
  const v1::TenantList shown = printable(list);
  EXPECT_EQ(shown.tenants(0).pod().name(), "default/\\x1b]0;owned\\x07");
  EXPECT_EQ(shown.tenants(0).pod().containers(0).resources().name(), "app\\x1b[2J");
  EXPECT_EQ(list.tenants(0).pod().containers(0).resources().name(), "app\x1b[2J") << "the original is kept";
}

}  // namespace
}  // namespace vri::ctl
