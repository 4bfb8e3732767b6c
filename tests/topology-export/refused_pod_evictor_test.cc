// The pod a vrid event names, as the refused-pod evictor counts refusals by it (the evictor itself
// runs against the control plane: tests/cluster/refused_pod_eviction_test.cc).
#include <gtest/gtest.h>

#include "topology-export/refused_pod_evictor.h"

namespace vri::topology_export {
namespace {

TEST(RefusedPodEvictorTest, APodsUidFromItsTenantOrItsContainersAndNothingFromOthers) {
  EXPECT_EQ(podUidOfTenant("pod/0b1c2d3e-0000-4000-8000-00000000000a"), "0b1c2d3e-0000-4000-8000-00000000000a");
  EXPECT_EQ(podUidOfTenant("pod/0b1c2d3e-0000-4000-8000-00000000000a/app"), "0b1c2d3e-0000-4000-8000-00000000000a");
  EXPECT_EQ(podUidOfTenant("vm/7d7e0a2e-0000-4000-8000-0000000000a1"), "");
  EXPECT_EQ(podUidOfTenant("draining/pod/x"), "");
  EXPECT_EQ(podUidOfTenant(""), "");
}

}  // namespace
}  // namespace vri::topology_export
