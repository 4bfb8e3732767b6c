// PersistentMap against std::map under random updates, and what it shares.
#include "accounting/persistent_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace vri {
namespace {

TEST(PersistentMapTest, AgreesWithStdMapAndLeavesEveryOldVersionAsItWas) {
  std::mt19937 random(3);
  PersistentMap<std::string, int> map;
  std::map<std::string, int> expected;
  std::vector<std::pair<PersistentMap<std::string, int>, std::map<std::string, int>>> versions;
  for (int step = 0; step < 3000; ++step) {
    const std::string key = "k" + std::to_string(random() % 400);
    if (random() % 3 == 0) {
      map = map.erase(key);
      expected.erase(key);
    } else {
      const int value = static_cast<int>(random() % 1000);
      map = map.set(key, value);
      expected[key] = value;
    }
    if (step % 300 == 0) versions.emplace_back(map, expected);
    ASSERT_EQ(map.size(), expected.size());
  }
  versions.emplace_back(map, expected);
  for (const auto& [version, want] : versions) {
    std::vector<std::pair<std::string, int>> got;
    for (const auto& [key, value] : version) got.emplace_back(key, value);
    const std::vector<std::pair<std::string, int>> sorted(want.begin(), want.end());
    ASSERT_EQ(got, sorted);
    for (const auto& [key, value] : want) EXPECT_EQ(version.at(key), value);
    EXPECT_EQ(version.find("absent"), nullptr);
  }
}

TEST(PersistentMapTest, AnUpdateSharesEveryRecordItDidNotTouch) {
  PersistentMap<std::string, std::vector<int>> before;
  for (int i = 0; i < 100; ++i) before = before.set("t" + std::to_string(i), std::vector<int>(10, i));
  const auto after = before.set("t7", {7}).erase("t8");
  for (int i = 0; i < 100; ++i) {
    const std::string key = "t" + std::to_string(i);
    EXPECT_EQ(before.sharesEntry(after, key), i != 7 && i != 8) << key;
  }
  EXPECT_EQ(before.at("t7").size(), 10u);  // the old version keeps its record
  EXPECT_EQ(before.size(), 100u);
  EXPECT_EQ(after.size(), 99u);
  EXPECT_THROW((void)after.at("t8"), std::out_of_range);
}

}  // namespace
}  // namespace vri
