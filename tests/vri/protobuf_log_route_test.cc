// protobuf's own lines through vrid's rate-limited log: thousands of requests with invalid UTF-8
// in a string field write the limit's lines, and the count of the rest, not one line each.
#include "vri/protobuf_log_route.h"

#include <gmock/gmock.h>

#include <string>
#include <vector>

#include "proto/vri.pb.h"
#include "tests/support/manual_clock.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(ProtobufLogRouteTest, InvalidUtf8RequestsWriteTheLimitsLinesNotOneEach) {
  testing::ManualClock clock;
  std::vector<std::string> lines;
  RateLimitedLog log([&](const std::string& line) { lines.push_back(line); }, clock, 20);
  {
    ProtobufLogRoute route(log);
    ASSERT_TRUE(route.installed());
    // ClientVersion.program (field 1, a string) holding the byte 0xff.
    const std::string invalid("\x0a\x01\xff", 3);
    for (int i = 0; i < 5000; ++i) {
      v1::ClientVersion message;
      EXPECT_FALSE(message.ParseFromString(invalid));
    }
    EXPECT_EQ(lines.size(), 20u);
    EXPECT_THAT(lines.front(), HasSubstr("protobuf: "));
    EXPECT_THAT(lines.front(), HasSubstr("invalid UTF-8"));
    EXPECT_EQ(log.dropped(), 4980u);
    // A second route (a second vrid in one process) leaves the first in place.
    RateLimitedLog other([](const std::string&) {}, clock);
    EXPECT_FALSE(ProtobufLogRoute(other).installed());
  }
  // Gone with its route: protobuf's own handler again, and this log sees nothing more.
  v1::ClientVersion message;
  EXPECT_FALSE(message.ParseFromString(std::string("\x0a\x01\xff", 3)));
  EXPECT_EQ(lines.size(), 20u);
}

}  // namespace
}  // namespace vri
