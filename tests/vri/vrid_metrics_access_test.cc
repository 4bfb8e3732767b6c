// The metrics endpoint of a whole vrid: it is not served to everyone who can reach the port.
// metrics_port without metrics_token_file, or with a token everyone may read, refuses the start
// before anything is served; with one, a scrape needs the token and gets what vrid keeps.
#include <gmock/gmock.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "tests/support/loopback_http.h"
#include "tests/vri/daemon_harness.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(VridMetricsAccessTest, AMetricsPortWithoutATokenOnlyItsReadersKnowRefusesTheStart) {
  testing::DaemonHarness vrid;
  vrid.config.metricsPort = testing::freeLoopbackPort();
  auto refused = vrid.start();
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.message(), HasSubstr("metrics_port is set without metrics_token_file"));
  EXPECT_FALSE(std::filesystem::exists(vrid.config.socket)) << "nothing is served before the token is read";

  const std::string token = vrid.tmp().sub("metrics.token");
  std::ofstream(token) << "short\n";
  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  vrid.config.metricsTokenFile = token;
  refused = vrid.start();
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.message(), HasSubstr("a token needs 16 or more"));

  std::ofstream(token, std::ios::trunc) << "an-operators-token-of-32-letters\n";
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  refused = vrid.start();
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.message(), HasSubstr("may be read by everyone"));
  EXPECT_FALSE(std::filesystem::exists(vrid.config.socket));

  ASSERT_EQ(::chmod(token.c_str(), 0640), 0);
  ASSERT_TRUE(vrid.start());
  EXPECT_THAT(testing::loopbackHttp(vrid.config.metricsPort, "GET", "/metrics", ""), HasSubstr(" 401 "));
  EXPECT_THAT(testing::loopbackHttp(vrid.config.metricsPort, "GET", "/metrics", "an-operators-token-of-32-letter"),
              HasSubstr(" 401 "));
  const std::string answer =
      testing::loopbackHttp(vrid.config.metricsPort, "GET", "/metrics", "an-operators-token-of-32-letters");
  EXPECT_THAT(answer, HasSubstr(" 200 "));
  EXPECT_THAT(answer, HasSubstr("vri_node_cpus{pool=\"online\"} 8"));
}

}  // namespace
}  // namespace vri
