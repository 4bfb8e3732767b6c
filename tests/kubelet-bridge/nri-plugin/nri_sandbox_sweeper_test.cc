// The NRI plugin's sweep for pods whose removal the runtime does not relay, on the fakes: a watched
// sandbox gone from the runtime's list has its pod released by sandbox id; one still listed, or
// whose removal was relayed, is left alone; nothing is listed while nothing is watched. A watched
// sandbox the list shows stopped goes to the releaser, as a relayed StopPodSandbox would.
#include "kubelet-bridge/nri-plugin/nri_sandbox_sweeper.h"

#include <gtest/gtest.h>

#include "tests/support/eventually.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/written_kubelet.h"
#include "tools/cri-client/cri_client.h"

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

TEST(NriSandboxSweeperTest, AWatchedSandboxTheRuntimeShowsStoppedGoesToTheReleaser) {
  testing::FakeVrid vrid;
  testing::FakeRuntime runtime;
  testing::WrittenKubelet kubelet;
  StoppedPodReleaser releaser(vrid, kubelet, {});
  const std::string running = runtime.addSandbox(cri_client::sandboxConfig("uid-run", "run", "/kubepods/podrun"));
  const std::string stopped = runtime.addSandbox(cri_client::sandboxConfig("uid-stop", "stop", "/kubepods/podstop"));
  ASSERT_TRUE(runtime.stopPodSandbox(CallScope::within(std::chrono::seconds(1)), stopped).ok());
  NriSandboxSweeper sweeper(
      vrid, runtime, std::chrono::milliseconds(10), [](const std::string&) {}, &releaser);
  sweeper.watch({running, stopped});
  ASSERT_TRUE(testing::eventually([&] { return releaser.waiting() == 1; }));
  vrid.holdPod("uid-stop", stopped, {});
  vrid.holdPod("uid-run", running, {});
  for (int i = 0; i < 3; ++i) releaser.poll();
  EXPECT_FALSE(vrid.holds("uid-stop"));
  EXPECT_TRUE(vrid.holds("uid-run"));
  EXPECT_EQ(sweeper.watched(), 2u) << "both still listed: the sweep releases only what is gone";
  // Seen stopped again at the next sweeps: dealt with, it waits no more.
  const uint64_t swept = sweeper.sweeps();
  ASSERT_TRUE(testing::eventually([&] { return sweeper.sweeps() >= swept + 2; }));
  EXPECT_EQ(releaser.waiting(), 0u);
}

}  // namespace
}  // namespace vri
