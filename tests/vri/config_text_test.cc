// vrid's configuration file: what vrid takes, it prints (--print-config) in a form it takes again.
#include <gmock/gmock.h>

#include "vri/daemon_config.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

// Found by fuzz/config_fuzz (fuzz/regressions/config_fuzz/): a path whose trailing "/" was dropped
// kept a blank at the end of its last component, which the printed file then lost.
TEST(ConfigTextTest, AValueTheFileCannotHoldIsRefusedNotChangedOnTheWayBack) {
  DaemonConfig config = defaultConfig();
  const auto refused = applyConfigText(config, "kubelet_cgroup_root = /a/b /\n", "vrid.conf");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("vrid.conf:1: kubelet_cgroup_root"));
  EXPECT_THAT(refused.error().message(), HasSubstr("cannot hold"));
  EXPECT_EQ(formatConfig(config), formatConfig(defaultConfig()));  // nothing taken
  // A blank inside a value is the value's: it prints and reads back as it was.
  ASSERT_TRUE(applyConfigText(config, "kubelet_cgroup_root = /a b/c/\n", "vrid.conf").ok());
  DaemonConfig again = defaultConfig();
  ASSERT_TRUE(applyConfigText(again, formatConfig(config), "printed").ok());
  EXPECT_EQ(formatConfig(again), formatConfig(config));
  EXPECT_THAT(formatConfig(again), HasSubstr("kubelet_cgroup_root = /a b/c\n"));
}

}  // namespace
}  // namespace vri
