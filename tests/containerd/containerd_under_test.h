// Which of the fixture's containerds a `containerd` test runs against
// (tests/containerd/containerd-fixture.sh): Debian's 1.6 unless VRI_CONTAINERD names a 2.x flavour:
// "2" (the release every containerd 2.x test runs on), or "2.0" and "2.4" (the oldest and newest
// 2.x lines, for the NRI plugin's tests). CTest runs each containerd test once per version, with
// the same assertions.
#pragma once

#include <cstdlib>
#include <string>

namespace vri::testing {

struct ContainerdUnderTest {
  std::string flavour;  // "1.6", "2", "2.0" or "2.4": the fixture's argument
  std::string root;     // the fixture's directory

  bool atLeast2() const { return flavour != "1.6"; }
  std::string socket() const { return root + "/run/containerd.sock"; }
  std::string nriSocket() const { return root + "/run/nri.sock"; }
  std::string fixtureHint() const { return "start it with tests/containerd/containerd-fixture.sh up " + flavour; }
};

inline ContainerdUnderTest containerdUnderTest() {
  const char* chosen = std::getenv("VRI_CONTAINERD");
  const std::string flavour = chosen == nullptr ? "1.6" : chosen;
  if (flavour == "2" || flavour == "2.0" || flavour == "2.4") return {flavour, "/var/tmp/vri-containerd" + flavour};
  return {"1.6", "/var/tmp/vri-containerd"};
}

}  // namespace vri::testing
