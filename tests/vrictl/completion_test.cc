// The shell's TAB: commands, their flags, tenants' names, and the words a line splits into.
#include "vrictl/completion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri::ctl {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

CompletionSource source(int* asked) {
  return {commandSummaries(),
          [asked] {
            ++*asked;
            return std::vector<std::string>{"db", "builder", "4f2c9a10-aaaa-4000-8000-000000000001"};
          },
          [] {
            return std::vector<std::string>{"default/web", "shop/cart"};
          }};
}

TEST(VrictlCompletionTest, CommandsThenFlagsThenTheTenantsAVmOrPodCommandTakes) {
  int asked = 0;
  const CompletionSource names = source(&asked);
  EXPECT_THAT(completionsFor("li", names), ElementsAre("list"));
  EXPECT_THAT(completionsFor("p", names), ElementsAre("podinfo", "pool"));
  EXPECT_THAT(completionsFor("list --", names), ElementsAre("--all", "--help", "--json", "--pods", "--vms"));
  EXPECT_THAT(completionsFor("events --f", names), ElementsAre("--follow"));
  EXPECT_EQ(asked, 0);  // vrid is asked for names only when a name is wanted
  EXPECT_THAT(completionsFor("dominfo ", names), ElementsAre("4f2c9a10-aaaa-4000-8000-000000000001", "builder", "db"));
  EXPECT_THAT(completionsFor("dominfo b", names), ElementsAre("builder"));
  EXPECT_EQ(asked, 2);
  EXPECT_THAT(completionsFor("podinfo s", names), ElementsAre("shop/cart"));
  EXPECT_THAT(completionsFor("help ma", names), ElementsAre("map"));
  EXPECT_THAT(completionsFor("frobnicate ", names), IsEmpty());
  EXPECT_THAT(completionsFor("dominfo db ", names), ElementsAre("--help", "--json"));  // the argument is given
}

TEST(VrictlCompletionTest, WordsSplitAtBlanksWithQuotesAndTheCommonPrefixIsWhatTabAddsFirst) {
  EXPECT_THAT(splitWords("  dominfo   'my vm' \"x y\"z "), ElementsAre("dominfo", "my vm", "x yz"));
  EXPECT_THAT(splitWords("''"), ElementsAre(""));
  EXPECT_THAT(splitWords(""), IsEmpty());
  EXPECT_EQ(commonPrefix({"podinfo", "pool"}), "po");
  EXPECT_EQ(commonPrefix({"list"}), "list");
  EXPECT_EQ(commonPrefix({}), "");
}

}  // namespace
}  // namespace vri::ctl
