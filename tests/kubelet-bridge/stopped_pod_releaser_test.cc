// StoppedPodReleaser through the fakes (vrid) and a kubelet whose List the test writes: a pod is
// released once kubelet stopped its sandbox and has not listed it for three polls in a row, all
// with kubelet up for a while; never while kubelet lists it, is new, or does not answer; never
// under a sandbox kubelet has re-created. (KubeletPodResources against a real socket:
// kubelet_pod_resources_test.cc.)
#include <gtest/gtest.h>

#include "kubelet-bridge/cri-shim/cri_shim.h"
#include "kubelet-bridge/stopped_pod_releaser.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/manual_clock.h"
#include "tests/support/written_kubelet.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

class StoppedPodReleaserTest : public ::testing::Test {
 protected:
  StoppedPodReleaserTest() {
    StoppedPodReleaserOptions options;
    options.clock = &clock_;
    options.log = [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_ += line + "\n";
    };
    releaser_ = std::make_unique<StoppedPodReleaser>(vrid_, kubelet_, options);
  }
  void polls(int n) {
    for (int i = 0; i < n; ++i) releaser_->poll();
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }

  testing::ManualClock clock_;
  testing::FakeVrid vrid_;
  testing::WrittenKubelet kubelet_;
  std::mutex logMutex_;
  std::string log_;
  std::unique_ptr<StoppedPodReleaser> releaser_;
};

TEST_F(StoppedPodReleaserTest, AStoppedPodKubeletNoLongerListsIsReleasedAfterThreePolls) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  vrid_.holdPod("b", "sandbox-b", {{"app", "c-b"}});
  releaser_->sandboxStopped("sandbox-a");
  polls(2);
  EXPECT_TRUE(vrid_.holds("a")) << "released before the third poll";
  releaser_->poll();
  EXPECT_FALSE(vrid_.holds("a"));
  EXPECT_TRUE(vrid_.holds("b")) << "a pod whose sandbox was not stopped";
  ASSERT_EQ(vrid_.podReleases().size(), 1u);
  EXPECT_EQ(vrid_.podReleases()[0].sandbox_id(), "sandbox-a") << "the release names the stopped sandbox";
  EXPECT_EQ(releaser_->released(), 1u);
  EXPECT_EQ(releaser_->waiting(), 0u);
  EXPECT_NE(log().find("pod default/a: released: kubelet stopped sandbox sandbox-a"), std::string::npos) << log();
}

TEST_F(StoppedPodReleaserTest, APodKubeletStillListsIsKeptAndItsCountStartsAgain) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  releaser_->sandboxStopped("sandbox-a");
  polls(2);
  kubelet_.active = {"default/a"};  // the sandbox is being re-created: kubelet keeps the pod
  polls(5);
  kubelet_.active.clear();
  polls(2);
  EXPECT_TRUE(vrid_.holds("a")) << "two polls without it after it was listed";
  releaser_->poll();
  EXPECT_FALSE(vrid_.holds("a"));
}

TEST_F(StoppedPodReleaserTest, NothingCountsWhileKubeletIsNewAbsentOrSilent) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  releaser_->sandboxStopped("sandbox-a");
  kubelet_.up = std::chrono::seconds(5);  // just started: its List may not know its pods yet
  polls(5);
  kubelet_.up.reset();  // no socket
  polls(5);
  kubelet_.up = std::chrono::seconds(600);
  kubelet_.answers = false;
  polls(5);
  EXPECT_TRUE(vrid_.holds("a"));
  EXPECT_TRUE(vrid_.podReleases().empty());
  // Two polls, kubelet restarted, then two more: each restart starts the count again.
  kubelet_.answers = true;
  polls(2);
  kubelet_.up = std::chrono::seconds(1);
  releaser_->poll();
  kubelet_.up = std::chrono::seconds(600);
  polls(2);
  EXPECT_TRUE(vrid_.holds("a"));
  releaser_->poll();
  EXPECT_FALSE(vrid_.holds("a"));
}

TEST_F(StoppedPodReleaserTest, ASandboxReCreatedOrRemovedEndsTheWait) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  vrid_.holdPod("b", "sandbox-b", {{"app", "c-b"}});
  releaser_->sandboxStopped("sandbox-a");
  releaser_->sandboxStopped("sandbox-b");
  releaser_->poll();
  vrid_.holdPod("a", "sandbox-a2", {});  // kubelet made the pod a new sandbox
  releaser_->sandboxRemoved("sandbox-b");
  polls(5);
  EXPECT_TRUE(vrid_.holds("a"));
  EXPECT_TRUE(vrid_.holds("b")) << "the removal's own release is the shim's";
  EXPECT_TRUE(vrid_.podReleases().empty());
  EXPECT_EQ(releaser_->waiting(), 0u);
}

TEST_F(StoppedPodReleaserTest, AFailedReleaseIsTriedAgain) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  releaser_->sandboxStopped("sandbox-a");
  vrid_.refuseNext("ReleasePod", Error(ErrorCode::kUnavailable, "vrid restarting"));
  polls(3);
  EXPECT_TRUE(vrid_.holds("a"));
  EXPECT_NE(log().find("release failed (vrid restarting); trying again"), std::string::npos) << log();
  releaser_->poll();
  EXPECT_FALSE(vrid_.holds("a"));
}

TEST_F(StoppedPodReleaserTest, ItsThreadPollsOnTheClockWhileASandboxWaits) {
  vrid_.holdPod("a", "sandbox-a", {{"app", "c-a"}});
  releaser_->start();
  releaser_->sandboxStopped("sandbox-a");
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));
    clock_.advance(std::chrono::seconds(1));
  }
  EXPECT_TRUE(testing::eventually([&] { return !vrid_.holds("a"); }));
  releaser_.reset();  // stops and joins
}

TEST_F(StoppedPodReleaserTest, TheShimHandsItTheSandboxesKubeletStopsOnceTheRuntimeHasStoppedThem) {
  testing::FakeRuntime runtime;
  CriShimOptions options;
  options.releaser = releaser_.get();
  CriShim shim(runtime, vrid_, options);
  const CallScope kubelet = CallScope::within(std::chrono::seconds(5));
  runtime::v1::RunPodSandboxRequest run;
  *run.mutable_config() = cri_client::sandboxConfig(
      "uid-1", "pod-1", cri_client::podCgroupParent("/", cri_client::PodQos::kBurstable, "uid-1"));
  auto ran = shim.runPodSandbox(kubelet, run);
  ASSERT_TRUE(ran.ok()) << ran.error().message();
  const std::string sandbox = ran->pod_sandbox_id();

  runtime.failNext("StopPodSandbox", Error(ErrorCode::kUnavailable, "containerd restarting"));
  EXPECT_FALSE(shim.stopPodSandbox(kubelet, sandbox).ok());
  EXPECT_EQ(releaser_->waiting(), 0u) << "a stop the runtime refused";
  ASSERT_TRUE(shim.stopPodSandbox(kubelet, sandbox).ok());  // kubelet's retry
  EXPECT_EQ(releaser_->waiting(), 1u);
  polls(3);
  EXPECT_FALSE(vrid_.holds("uid-1"));

  // A removal, once the shim has passed it to the runtime, ends a wait.
  auto again = shim.runPodSandbox(kubelet, run);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(shim.stopPodSandbox(kubelet, again->pod_sandbox_id()).ok());
  ASSERT_TRUE(shim.removePodSandbox(kubelet, again->pod_sandbox_id()).ok());
  EXPECT_EQ(releaser_->waiting(), 0u);
}

}  // namespace
}  // namespace vri
