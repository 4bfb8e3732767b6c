// vrictl's tree on the other cgroup version and driver: cgroup v2 under systemd
// (kubelet's systemd driver, machine.slice), where the pod slices inherit their
// QoS slice's cpuset and cpu.weight stands for shares; a hand write to a
// container's scope is marked. The golden file shows it as vrictl prints it.
#include <gtest/gtest.h>

#include "tests/vri/systemd_node.h"
#include "tests/vrictl/golden_output.h"
#include "vri/api_convert.h"
#include "vrictl/tree_view.h"

namespace vri {
namespace {

TEST(VrictlTreeSystemdTest, ACgroupV2SystemdNodeWithADriftedScope) {
  SystemdNode node;
  node.runBestEffortPod(1);
  node.runBestEffortPod(2);
  auto placed = node.admitExclusive(0, 2);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const CgroupPath scope = *node.podSlice(2).child("cri-containerd-c2.scope");
  ASSERT_TRUE(node.fixture().write({"", scope}, "cpuset.cpus", "0").ok());

  auto view = node.node->tree(true);
  ASSERT_TRUE(view.ok()) << view.error().message();
  v1::CgroupTree tree;
  fillCgroupTree(*view, CgroupVersion::kV2, KubeletDriver::kSystemd, tree);
  ASSERT_EQ(tree.cgroups(0).path(), "kubepods.slice");
  const std::string text = ctl::formatTree(tree, v1::TenantList(), ctl::TerminalStyle{false, 100});
  EXPECT_TRUE(testing::matchesGolden("tree-v2-systemd.txt", text));
}

}  // namespace
}  // namespace vri
