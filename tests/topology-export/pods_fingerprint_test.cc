// The pods fingerprint against values the scheduler plugin's own module printed
// (tests/peers/podfingerprint: `podfingerprint <namespace/name>...`), so that a change of the
// computation fails here without a peer; pods_fingerprint_peer_test.cc compares many more sets with
// the peer itself.
#include "topology-export/pods_fingerprint.h"

#include <gtest/gtest.h>

namespace vri::topology_export {
namespace {

TEST(PodsFingerprintTest, MatchesTheSchedulerPluginsValues) {
  EXPECT_EQ(podsFingerprint({}), "pfp0v001ef46db3751d8e999");
  EXPECT_EQ(podsFingerprint({{"default", "a"}, {"ns", "b"}}), "pfp0v001416a984b61d3d963");
}

TEST(PodsFingerprintTest, TheOrderOfThePodsDoesNotMatterButEachNameDoes) {
  const std::string ab = podsFingerprint({{"default", "a"}, {"ns", "b"}});
  EXPECT_EQ(podsFingerprint({{"ns", "b"}, {"default", "a"}}), ab);
  EXPECT_NE(podsFingerprint({{"default", "a"}, {"ns", "c"}}), ab);
  // The namespace seeds the name's hash: the same name in another namespace is another pod.
  EXPECT_NE(podsFingerprint({{"default", "a"}, {"other", "b"}}), ab);
  EXPECT_NE(podsFingerprint({{"defaulta", ""}, {"ns", "b"}}), ab);
}

}  // namespace
}  // namespace vri::topology_export
