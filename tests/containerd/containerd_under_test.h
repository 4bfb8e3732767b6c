// Which of the fixture's containerds a `containerd` test runs against
// (tests/containerd/containerd-fixture.sh): Debian's 1.6 unless VRI_CONTAINERD says 2.
// CTest runs each containerd test once per version, with the same assertions.
#pragma once

#include <cstdlib>
#include <string>

namespace vri::testing {

struct ContainerdUnderTest {
  std::string flavour;  // "1.6" or "2": the fixture's argument
  std::string socket;   // its CRI socket

  bool atLeast2() const { return flavour == "2"; }
  std::string fixtureHint() const { return "start it with tests/containerd/containerd-fixture.sh up " + flavour; }
};

inline ContainerdUnderTest containerdUnderTest() {
  const char* chosen = std::getenv("VRI_CONTAINERD");
  if (chosen != nullptr && std::string(chosen) == "2") return {"2", "/var/tmp/vri-containerd2/run/containerd.sock"};
  return {"1.6", "/var/tmp/vri-containerd/run/containerd.sock"};
}

}  // namespace vri::testing
