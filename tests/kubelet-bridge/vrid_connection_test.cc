// The connection to vrid through the fakes: each Watch stream starts with the
// ledger against the runtime (what is gone released, what runs unknown
// adopted), then the follower; pool changes hand the follower new lists; a
// stream that ends is opened again after the reconnect interval on the clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kubelet-bridge/vrid_connection.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/manual_clock.h"
#include "tests/support/text_count.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

namespace kubelet = cri_client;

class VridConnectionTest : public ::testing::Test {
 protected:
  void start() {
    SharedPoolFollowerOptions following;
    following.clock = &clock_;
    follower_ = std::make_unique<SharedPoolFollower>(vrid_, runtime_, following);
    VridConnectionOptions options;
    options.clock = &clock_;
    options.log = [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_ += line + "\n";
    };
    connection_ = std::make_unique<VridConnection>(vrid_, runtime_, *follower_, options);
    connection_->start();
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }
  void TearDown() override {
    connection_.reset();
    follower_.reset();
  }

  testing::ManualClock clock_;
  testing::FakeRuntime runtime_;
  testing::FakeVrid vrid_;
  std::mutex logMutex_;
  std::string log_;
  std::unique_ptr<SharedPoolFollower> follower_;
  std::unique_ptr<VridConnection> connection_;
};

TEST_F(VridConnectionTest, EachStreamReleasesWhatIsGoneAndAdoptsWhatRunsUnknown) {
  // vrid holds a pod whose sandbox was removed while the shim was down...
  vrid_.holdPod("gone", "sandbox-removed", {});
  // ...and the runtime runs a pod made before the shim ran.
  const auto config =
      kubelet::sandboxConfig("uid-2", "early", kubelet::podCgroupParent("/", kubelet::PodQos::kGuaranteed, "uid-2"));
  const std::string sandbox = runtime_.addSandbox(config);
  auto app = kubelet::containerConfig(config, "app", kubelet::kubeletResources(1000, 1000, 64 << 20));
  app.mutable_linux()->mutable_resources()->set_cpuset_cpus("3");
  const std::string container = runtime_.addContainer(sandbox, app, runtime::v1::CONTAINER_RUNNING);
  start();
  ASSERT_TRUE(testing::eventually([&] { return connection_->passes() >= 1; }));
  ASSERT_THAT(vrid_.podReleases(), SizeIs(1));
  EXPECT_EQ(vrid_.podReleases()[0].sandbox_id(), "sandbox-removed");
  EXPECT_FALSE(vrid_.holds("gone"));
  ASSERT_THAT(vrid_.podAdmits(), SizeIs(1));
  EXPECT_EQ(vrid_.podAdmits()[0].sandbox_id(), sandbox);
  const auto admits = vrid_.containerAdmits();
  ASSERT_THAT(admits, SizeIs(1));
  EXPECT_EQ(admits[0].container_id(), container);
  EXPECT_EQ(admits[0].running_cpus(), "3");  // on the CPUs it holds
  EXPECT_EQ(admits[0].cgroup_parent(), config.linux().cgroup_parent());
  EXPECT_THAT(log(), HasSubstr("its sandbox is gone from the runtime; released"));

  // vrid goes away and comes back: a new stream, once the clock allows, and the ledger checked again.
  vrid_.endStream();
  ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));
  EXPECT_EQ(connection_->streams(), 1u);
  clock_.advance(std::chrono::milliseconds(500));
  ASSERT_TRUE(testing::eventually([&] { return connection_->streams() == 2 && connection_->passes() >= 2; }));
  EXPECT_THAT(vrid_.containerAdmits(), SizeIs(1));  // known now: nothing adopted twice
}

// A node taken over: vrid adopted the running pod from its cgroups, by ids. The runtime names it: its
// sandbox is bound (it was taken for a container) and its app adopted under its name, on its CPUs.
TEST_F(VridConnectionTest, APodVridAdoptedFromItsCgroupsIsNamedByTheRuntime) {
  const auto config =
      kubelet::sandboxConfig("uid-4", "taken", kubelet::podCgroupParent("/", kubelet::PodQos::kGuaranteed, "uid-4"));
  const std::string sandbox = runtime_.addSandbox(config);
  auto app = kubelet::containerConfig(config, "app", kubelet::kubeletResources(1000, 1000, 64 << 20));
  app.mutable_linux()->mutable_resources()->set_cpuset_cpus("1");
  const std::string container = runtime_.addContainer(sandbox, app, runtime::v1::CONTAINER_RUNNING);
  vrid_.holdPodFromCgroups("uid-4", {sandbox, container});
  start();
  ASSERT_TRUE(testing::eventually([&] { return connection_->passes() >= 1; }));
  ASSERT_THAT(vrid_.podAdmits(), SizeIs(1));
  EXPECT_EQ(vrid_.podAdmits()[0].sandbox_id(), sandbox);
  EXPECT_EQ(vrid_.podAdmits()[0].pod_name(), "default/taken");
  const auto admits = vrid_.containerAdmits();
  ASSERT_THAT(admits, SizeIs(1));
  EXPECT_EQ(admits[0].container_id(), container);
  EXPECT_EQ(admits[0].container_name(), "app");
  EXPECT_EQ(admits[0].running_cpus(), "1");
  EXPECT_THAT(vrid_.podReleases(), SizeIs(0));
}

TEST_F(VridConnectionTest, APoolChangeBringsTheRuntimeInLine) {
  const auto config =
      kubelet::sandboxConfig("uid-1", "web", kubelet::podCgroupParent("/", kubelet::PodQos::kBurstable, "uid-1"));
  const std::string sandbox = runtime_.addSandbox(config);
  const std::string container =
      runtime_.addContainer(sandbox, kubelet::containerConfig(config, "web", kubelet::kubeletResources(250, 0, 0)),
                            runtime::v1::CONTAINER_RUNNING);
  vrid_.holdPod("uid-1", sandbox, {{"web", container}});
  vrid_.setSharedCpus("0-7");
  start();
  ASSERT_TRUE(testing::eventually([&] { return follower_->updatesApplied() == 1 && follower_->idle(); }));
  vrid_.setSharedCpus("0-5");
  vrid_.push(v1::Event::SHARED_POOL_CHANGED);
  ASSERT_TRUE(testing::eventually([&] { return follower_->updatesApplied() == 2; }));
  EXPECT_EQ(runtime_.resourcesOf(container).cpuset_cpus(), "0-5");
}

TEST_F(VridConnectionTest, AnAbsenceIsSaidOnceAndItsEndOnceEvenWhenVridIsBackBeforeTheRetry) {
  start();
  ASSERT_TRUE(testing::eventually([&] { return connection_->passes() == 1; }));
  // The stream has carried an event: vrid was there, then it restarts before the retry is due.
  vrid_.push(v1::Event::SHARED_POOL_CHANGED);
  ASSERT_TRUE(testing::eventually([&] { return connection_->passes() == 2; }));
  vrid_.endStream();
  ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));
  clock_.advance(std::chrono::milliseconds(500));
  ASSERT_TRUE(testing::eventually([&] { return connection_->streams() == 2 && connection_->passes() == 3; }));
  EXPECT_EQ(testing::count(log(), "following again when it is back"), 1u) << log();
  EXPECT_EQ(testing::count(log(), "following vrid's events again"), 1u) << log();
  EXPECT_EQ(testing::count(log(), "following vrid's events"), 2u) << log();  // the first stream's start, and again
}

TEST_F(VridConnectionTest, AStopCancelsTheStream) {
  start();
  ASSERT_TRUE(testing::eventually([&] { return connection_->passes() == 1; }));
  const auto before = std::chrono::steady_clock::now();
  connection_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
}

}  // namespace
}  // namespace vri
