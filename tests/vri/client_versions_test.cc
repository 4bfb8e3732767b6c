#include "vri/client_versions.h"

#include <gmock/gmock.h>

#include "tests/support/manual_clock.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

TEST(ClientVersionsTest, KeepsTheLastVersionEachVriProgramCalledWith) {
  testing::ManualClock clock;
  ClientVersions clients(clock);
  clients.record("vri-hook/0.1.0-1 grpc-c++/1.51.1 (linux; chttp2)");
  clock.advance(std::chrono::seconds(7));
  clients.record("vri-cri-shim/0.1.0-1 grpc-c++/1.51.1");
  clients.record("vri-hook/0.2.0-1 grpc-c++/1.51.1");
  clock.advance(std::chrono::seconds(3));
  const auto list = clients.list();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].program, "vri-cri-shim");
  EXPECT_EQ(list[0].version, "0.1.0-1");
  EXPECT_EQ(list[0].sinceLastCall, std::chrono::seconds(3));
  EXPECT_EQ(list[1].program, "vri-hook");
  EXPECT_EQ(list[1].version, "0.2.0-1");  // the upgraded hook replaces the old one
}

TEST(ClientVersionsTest, IgnoresAgentsThatNameNoVriProgramOrAVersion) {
  testing::ManualClock clock;
  ClientVersions clients(clock);
  for (const char* agent : {"grpc-c++/1.51.1", "", "vri-hook", "vri-hook/", "vri-hook/1.0\x01", "VRI-HOOK/1.0",
                            "vri-hook/../../etc", "curl/8.0 vri-hook/1.0", "vrid2/1.0"})
    clients.record(agent);
  EXPECT_TRUE(clients.list().empty());
  clients.record("vrictl/0.1.0-1");
  EXPECT_THAT(clients.list(), ElementsAre(Field(&ClientVersion::program, "vrictl")));
}

TEST(ClientVersionsTest, AnInventedNameBeyondTheLimitIsNotKept) {
  testing::ManualClock clock;
  ClientVersions clients(clock);
  for (size_t i = 0; i < ClientVersions::kMaxPrograms + 10; ++i)
    clients.record("vri-" + std::string(i + 1, 'x') + "/1.0");
  EXPECT_EQ(clients.list().size(), ClientVersions::kMaxPrograms);
  clients.record("vri-x/2.0");  // one it knows is still updated
  EXPECT_EQ(clients.list()[0].version, "2.0");
}

}  // namespace
}  // namespace vri
