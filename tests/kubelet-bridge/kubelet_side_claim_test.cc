// One placer of kubelet's pods per vrid (kubelet_side_claim.h): a second claim on the same vrid
// socket, by either program, is refused naming the first; released, it can be taken again.
#include "kubelet-bridge/kubelet_side_claim.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(KubeletSideClaimTest, TheShimAndThePluginAreNotBothPlacersForOneVrid) {
  testing::TempDir tmp;
  const std::string vrid = tmp.sub("run/admin.sock");  // its directory is made if vrid has not yet
  auto plugin = KubeletSideClaim::take(vrid, "vri-nri-plugin");
  ASSERT_TRUE(plugin.ok()) << plugin.error().message();

  auto shim = KubeletSideClaim::take(vrid, "vri-cri-shim");
  ASSERT_FALSE(shim.ok());
  EXPECT_EQ(shim.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(shim.error().message(), HasSubstr("vri-nri-plugin (pid " + std::to_string(::getpid()) + ")"));
  EXPECT_THAT(shim.error().message(), HasSubstr("already places this node's pods for vrid at " + vrid));
  EXPECT_THAT(shim.error().message(), HasSubstr("run vri-cri-shim or vri-nri-plugin, not both"));

  // Another vrid is another node's (or a test's): its own placer.
  auto other = KubeletSideClaim::take(tmp.sub("other/admin.sock"), "vri-cri-shim");
  EXPECT_TRUE(other.ok());

  plugin->reset();  // the plugin stops
  auto again = KubeletSideClaim::take(vrid, "vri-cri-shim");
  ASSERT_TRUE(again.ok()) << again.error().message();
  auto secondShim = KubeletSideClaim::take(vrid, "vri-cri-shim");
  ASSERT_FALSE(secondShim.ok());
  EXPECT_THAT(secondShim.error().message(), HasSubstr("vri-cri-shim (pid "));
}

}  // namespace
}  // namespace vri
