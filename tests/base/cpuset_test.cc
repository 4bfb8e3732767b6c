#include "base/cpuset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(CpuSetTest, ParsesAndFormatsCanonically) {
  struct Case {
    const char* input;
    const char* canonical;
    int count;
  };
  const Case cases[] = {
      {"", "", 0},
      {"0", "0", 1},
      {"0-3", "0-3", 4},
      {"0-3,8,10-11", "0-3,8,10-11", 7},
      {"8,0-3,10-11", "0-3,8,10-11", 7},
      {"0-3,2-5", "0-5", 6},
      {"1,1", "1", 1},
      {"0,1", "0-1", 2},
      {"0-0", "0", 1},
      {"63-64", "63-64", 2},
      {"8191", "8191", 1},
      {"0-8191", "0-8191", 8192},
  };
  for (const Case& c : cases) {
    auto set = CpuSet::parse(c.input);
    ASSERT_TRUE(set.ok()) << c.input << ": " << set.error().message();
    EXPECT_EQ(set->format(), c.canonical) << c.input;
    EXPECT_EQ(set->count(), c.count) << c.input;
  }
}

TEST(CpuSetTest, RejectsMalformedInputQuotingIt) {
  struct Case {
    const char* input;
    const char* why;
  };
  const Case cases[] = {
      {"3-1", "runs backwards"},
      {"1-2-3", "is not an id or a range"},
      {"a", "is not a CPU id or a range"},
      {",", "empty element"},
      {"0-", "has no end"},
      {"-1", "negative CPU id"},
      {"0,-1", "negative CPU id"},
      {"-", "has no end"},
      {"0,,1", "empty element"},
      {"1,", "empty element"},
      {" 1", "is not a CPU id or a range"},
      {"1\n", "is not a CPU id or a range"},
      {"0x3", "is not a CPU id or a range"},
      {"01", "leading zero"},
      {"8192", "CPU id \"8192\" is out of range (the largest is 8191)"},
      {"0-99999999999999999999", "out of range"},
      {"1:2", "is not a CPU id or a range"},
      {"0-7:2/4", "is not a CPU id or a range"},
  };
  for (const Case& c : cases) {
    auto set = CpuSet::parse(c.input);
    ASSERT_FALSE(set.ok()) << "accepted " << c.input;
    EXPECT_EQ(set.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(set.error().message(), HasSubstr(c.why)) << c.input;
    EXPECT_THAT(set.error().message(), HasSubstr("invalid cpuset \"")) << c.input;
  }
  EXPECT_EQ(CpuSet::parse("3-1").error().message(), "invalid cpuset \"3-1\": range \"3-1\" runs backwards");
}

TEST(CpuSetTest, QuotesHostileInputSafely) {
  const std::string huge(100000, '9');
  auto set = CpuSet::parse(huge);
  ASSERT_FALSE(set.ok());
  EXPECT_LT(set.error().message().size(), 400u);
  auto control = CpuSet::parse(std::string("1\x01", 2));
  ASSERT_FALSE(control.ok());
  EXPECT_THAT(control.error().message(), HasSubstr("\\x01"));
}

TEST(CpuSetTest, SetOperations) {
  const CpuSet a = *CpuSet::parse("0-7");
  const CpuSet b = *CpuSet::parse("4-11");
  EXPECT_EQ((a | b).format(), "0-11");
  EXPECT_EQ((a & b).format(), "4-7");
  EXPECT_EQ((a - b).format(), "0-3");
  EXPECT_EQ((b - a).format(), "8-11");
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE((a - b).intersects(b));
  EXPECT_TRUE((a & b).isSubsetOf(a));
  EXPECT_FALSE(a.isSubsetOf(b));
  EXPECT_TRUE(CpuSet().isSubsetOf(a));
  EXPECT_EQ(a.first(), 0);
  EXPECT_EQ(b.last(), 11);
  EXPECT_EQ(CpuSet().first(), -1);
  EXPECT_EQ(CpuSet().last(), -1);
  EXPECT_EQ(b.lowest(3).format(), "4-6");
}

TEST(CpuSetTest, EqualityIgnoresHowTheSetWasBuilt) {
  CpuSet grown = CpuSet::range(0, 8000);
  grown -= CpuSet::range(64, 8000);
  EXPECT_EQ(grown, CpuSet::range(0, 63));
  CpuSet single{8191};
  single.remove(8191);
  EXPECT_EQ(single, CpuSet());
  EXPECT_TRUE(single.empty());
  EXPECT_EQ(CpuSet::range(0, 8191) & CpuSet{5}, CpuSet{5});
}

TEST(CpuSetTest, IteratesInAscendingOrder) {
  const CpuSet set = *CpuSet::parse("130,3,64-65,8191");
  EXPECT_EQ(set.toVector(), (std::vector<int>{3, 64, 65, 130, 8191}));
  int visited = 0;
  for (int cpu : set) {
    EXPECT_TRUE(set.contains(cpu));
    ++visited;
  }
  EXPECT_EQ(visited, set.count());
}

// Random sets agree with std::set on every operation and survive format/parse.
TEST(CpuSetTest, AgreesWithReferenceModel) {
  std::mt19937 random(12345);
  for (int round = 0; round < 200; ++round) {
    const int universe = round % 2 == 0 ? 256 : CpuSet::kMaxCpus;
    std::set<int> ra, rb;
    CpuSet a, b;
    std::uniform_int_distribution<int> pick(0, universe - 1);
    for (int i = 0; i < 40; ++i) {
      int x = pick(random), y = pick(random);
      ra.insert(x), a.add(x);
      rb.insert(y), b.add(y);
    }
    std::set<int> ru, ri, rd;
    for (int x : ra) (rb.count(x) ? ri : rd).insert(x);
    ru = ra;
    ru.insert(rb.begin(), rb.end());
    const auto asVector = [](const std::set<int>& s) { return std::vector<int>(s.begin(), s.end()); };
    EXPECT_EQ((a | b).toVector(), asVector(ru));
    EXPECT_EQ((a & b).toVector(), asVector(ri));
    EXPECT_EQ((a - b).toVector(), asVector(rd));
    EXPECT_EQ(a.intersects(b), !ri.empty());
    EXPECT_EQ(*CpuSet::parse(a.format()), a);
  }
}

}  // namespace
}  // namespace vri
