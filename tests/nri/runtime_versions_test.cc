// What is known of the runtimes' NRI versions (nri/runtime_versions.h): which events each knows,
// which take unsolicited updates safely, which clean up a sandbox a plugin refused.
#include "nri/runtime_versions.h"

#include <gtest/gtest.h>

namespace vri {
namespace {

namespace api = ::nri::pkg::api::v1alpha1;

// Which runtime knows which events: the events each NRI's api.proto lists (v0.8.0 ends at
// REMOVE_CONTAINER; v0.11.0 and v0.12.3 at VALIDATE_CONTAINER_ADJUSTMENT), and the NRI each
// containerd release vendors (2.0 and 2.1: v0.8.0; 2.2: v0.11.0; 2.4: v0.12.3).
TEST(NriEventMaskTest, TheEventsTheRuntimesNriKnowsFollowItsVersionOrElseItsRelease) {
  EXPECT_EQ(nriEventsKnownTo("containerd", "v2.0.14", ""), api::REMOVE_CONTAINER);
  EXPECT_EQ(nriEventsKnownTo("containerd", "v2.1.5", ""), api::REMOVE_CONTAINER);
  EXPECT_EQ(nriEventsKnownTo("containerd", "v2.2.9", ""), api::VALIDATE_CONTAINER_ADJUSTMENT);
  EXPECT_EQ(nriEventsKnownTo("containerd", "v2.4.2", "v0.12.3"), api::VALIDATE_CONTAINER_ADJUSTMENT);
  // The NRI version, when the runtime names it, is what counts.
  EXPECT_EQ(nriEventsKnownTo("containerd", "v9.0.0", "v0.8.1"), api::REMOVE_CONTAINER);
  EXPECT_EQ(nriEventsKnownTo("cri-o", "1.34.0", "v0.12.0"), api::VALIDATE_CONTAINER_ADJUSTMENT);
  // Nothing more than the multiplexed protocol's first events is assumed of the unknown.
  EXPECT_EQ(nriEventsKnownTo("cri-o", "1.30.0", ""), api::REMOVE_CONTAINER);
  EXPECT_EQ(nriEventsKnownTo("containerd", "devel", "unknown"), api::REMOVE_CONTAINER);
}

// containerd#13733: before NRI v0.12.1 an unsolicited UpdateContainers can deadlock the runtime.
TEST(NriFailedSandboxesTest, ContainerdStopsThemFrom22On) {
  EXPECT_FALSE(runtimeStopsFailedSandboxes("containerd", "v2.0.14"));
  EXPECT_FALSE(runtimeStopsFailedSandboxes("containerd", "v2.1.5"));
  EXPECT_TRUE(runtimeStopsFailedSandboxes("containerd", "v2.2.0"));
  EXPECT_TRUE(runtimeStopsFailedSandboxes("containerd", "v2.4.2"));
  EXPECT_TRUE(runtimeStopsFailedSandboxes("cri-o", "1.31.0"));
  EXPECT_TRUE(runtimeStopsFailedSandboxes("containerd", "unknown"));  // the strict policy
}

TEST(NriUnsolicitedUpdatesTest, OnlyFromNriV0121On) {
  EXPECT_FALSE(nriTakesUnsolicitedUpdatesSafely(""));  // NRI before v0.12 names no version
  EXPECT_FALSE(nriTakesUnsolicitedUpdatesSafely("unknown"));
  EXPECT_FALSE(nriTakesUnsolicitedUpdatesSafely("v0.11.0"));
  EXPECT_FALSE(nriTakesUnsolicitedUpdatesSafely("v0.12.0"));
  EXPECT_TRUE(nriTakesUnsolicitedUpdatesSafely("v0.12.1"));
  EXPECT_TRUE(nriTakesUnsolicitedUpdatesSafely("v0.12.3"));
  EXPECT_TRUE(nriTakesUnsolicitedUpdatesSafely("v0.13.0"));
  EXPECT_TRUE(nriTakesUnsolicitedUpdatesSafely("v1.0.0"));
  EXPECT_FALSE(nriTakesUnsolicitedUpdatesSafely("v0.12"));
}

}  // namespace
}  // namespace vri
