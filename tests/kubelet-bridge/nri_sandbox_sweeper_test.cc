// The NRI plugin's sweep for pods whose removal the runtime does not relay, on the fakes: a watched
// sandbox gone from the runtime's list has its pod released by sandbox id; one still listed, or
// whose removal was relayed, is left alone; nothing is listed while nothing is watched.
#include "kubelet-bridge/nri_sandbox_sweeper.h"

#include <gtest/gtest.h>

#include "kubelet-bridge/cri_client.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"

namespace vri {
namespace {

TEST(NriSandboxSweeperTest, AWatchedSandboxGoneFromTheRuntimeHasItsPodReleasedOnce) {
  testing::FakeVrid vrid;
  testing::FakeRuntime runtime;
  const std::string kept = runtime.addSandbox(cri_client::sandboxConfig("uid-kept", "kept", "/kubepods/podkept"));
  std::vector<std::string> lines;
  std::mutex linesMutex;
  NriSandboxSweeper sweeper(vrid, runtime, std::chrono::milliseconds(10), [&](const std::string& line) {
    std::lock_guard lock(linesMutex);
    lines.push_back(line);
  });
  sweeper.watch({kept, "sb-gone", "sb-relayed"});
  sweeper.removed("sb-relayed");  // its removal came through NRI
  ASSERT_TRUE(testing::eventually([&] { return sweeper.watched() == 1; }));
  const auto releases = vrid.podReleases();
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].sandbox_id(), "sb-gone");
  {
    std::lock_guard lock(linesMutex);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0],
              "sandbox sb-gone is gone from the runtime, which relayed no removal for it; "
              "vrid held nothing under its id");
  }
  sweeper.removed(kept);
  EXPECT_EQ(sweeper.watched(), 0u);
  EXPECT_EQ(vrid.podReleases().size(), 1u);
}

}  // namespace
}  // namespace vri
