#include "vri/topology_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(TopologyCommandTest, DefaultsToTheLiveMachineWithoutReservation) {
  auto command = parseTopologyCommand({});
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->source, "live");
  EXPECT_FALSE(command->reserved.cpus.has_value());
  EXPECT_EQ(command->reserved.count, 0);
  EXPECT_FALSE(command->reserved.strict);
}

TEST(TopologyCommandTest, ParsesEveryFlagInBothSpellings) {
  auto command = parseTopologyCommand(
      {"--topology", "synthetic:pack:1 core:2 pu:2", "--reserved-cpus=0-1", "--strict-cpu-reservation"});
  ASSERT_TRUE(command.ok()) << command.error().message();
  EXPECT_EQ(command->source, "synthetic:pack:1 core:2 pu:2");
  EXPECT_EQ(command->reserved.cpus->format(), "0-1");
  EXPECT_TRUE(command->reserved.strict);
  command = parseTopologyCommand({"--reserved-cpu-count", "3"});
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->reserved.count, 3);
}

TEST(TopologyCommandTest, RefusesBadArguments) {
  EXPECT_THAT(parseTopologyCommand({"--reserved-cpus", "3-1"}).error().message(),
              HasSubstr("--reserved-cpus: invalid cpuset \"3-1\""));
  EXPECT_THAT(parseTopologyCommand({"--reserved-cpu-count", "two"}).error().message(),
              HasSubstr("non-negative integer"));
  EXPECT_THAT(parseTopologyCommand({"--reserved-cpu-count", "-1"}).error().message(),
              HasSubstr("non-negative integer"));
  // CLI11's words.
  EXPECT_THAT(parseTopologyCommand({"--topology"}).error().message(),
              HasSubstr("--topology: 1 required SOURCE missing"));
  EXPECT_THAT(parseTopologyCommand({"--frobnicate"}).error().message(), HasSubstr("not expected: --frobnicate"));
}

TEST(TopologyCommandTest, HelpIsMadeFromTheFlags) {
  auto command = parseTopologyCommand({"--help"});
  ASSERT_TRUE(command.ok());
  EXPECT_TRUE(command->help);
  const std::string usage = topologyUsage();
  for (const char* flag : {"--topology", "--reserved-cpus", "--reserved-cpu-count", "--strict-cpu-reservation"})
    EXPECT_THAT(usage, HasSubstr(flag));
}

}  // namespace
}  // namespace vri
