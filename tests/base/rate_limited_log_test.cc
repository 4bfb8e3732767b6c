#include "base/rate_limited_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/manual_clock.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RateLimitedLogTest, AFloodIsCutToItsRateAndTheNextLineCountsWhatWasDropped) {
  testing::ManualClock clock;
  std::vector<std::string> lines;
  RateLimitedLog log([&](const std::string& line) { lines.push_back(line); }, clock, 3);
  for (int i = 0; i < 1000; ++i) log.write("refused " + std::to_string(i));
  EXPECT_THAT(lines, ElementsAre("refused 0", "refused 1", "refused 2"));
  EXPECT_EQ(log.dropped(), 997u);
  clock.advance(std::chrono::seconds(1));
  log.write("refused again");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3], "refused again (997 more like it not logged)");
}

TEST(RateLimitedLogTest, ControlCharactersCannotForgeALine) {
  testing::ManualClock clock;
  std::vector<std::string> lines;
  RateLimitedLog log([&](const std::string& line) { lines.push_back(line); }, clock);
  log.write("ReleaseVm refused: no VM x\n2026-11-24T00:00:00Z info forged");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].find('\n'), std::string::npos);
  EXPECT_THAT(lines[0], HasSubstr("no VM x\\x0a2026"));
}

}  // namespace
}  // namespace vri
