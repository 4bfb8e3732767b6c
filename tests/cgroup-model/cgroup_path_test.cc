#include "cgroup-model/cgroup_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(CgroupPathTest, ParsesAndJoins) {
  auto path = CgroupPath::parse("/kubepods/burstable/");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(path->str(), "kubepods/burstable");
  EXPECT_EQ(path->depth(), 2u);
  EXPECT_EQ(path->child("pod1")->str(), "kubepods/burstable/pod1");
  EXPECT_EQ(path->parent().str(), "kubepods");
  EXPECT_TRUE(path->child("x")->isWithin(*path));
  EXPECT_FALSE(path->parent().isWithin(*path));
  EXPECT_TRUE(CgroupPath::parse("")->isRoot());
}

TEST(CgroupPathTest, RefusesHostileNamesBeforeBuildingAPath) {
  const CgroupPath base = *CgroupPath::parse("kubepods");
  struct Case {
    std::string name;
    const char* why;
  };
  const Case cases[] = {
      {"../../etc", "contains '/'"},
      {"..", "relative path element"},
      {".", "relative path element"},
      {"a/b", "contains '/'"},
      {"a\nb", "control character"},
      {std::string(300, 'x'), "longer than 255"},
      {"", "empty"},
      {std::string("a\0b", 3), "control character"},
  };
  for (const Case& c : cases) {
    auto child = base.child(c.name);
    ASSERT_FALSE(child.ok()) << c.name;
    EXPECT_EQ(child.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(child.error().message(), HasSubstr(c.why)) << c.name;
  }
  EXPECT_FALSE(CgroupPath::parse("kubepods//x").ok());
  EXPECT_FALSE(CgroupPath::parse("kubepods/../etc").ok());
}

}  // namespace
}  // namespace vri
