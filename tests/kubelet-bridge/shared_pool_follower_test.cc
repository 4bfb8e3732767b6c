// The pool follower through the fakes, on a manual clock: the latest value
// wins, per container one update at a time, stale lists are dropped, NotFound
// ends a container's following, a failed update (or a vrid that does not say
// where the container is) is retried when the clock says so, and a stop does
// not wait for a retry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kubelet-bridge/shared_pool_follower.h"
#include "tests/support/eventually.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/manual_clock.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

class SharedPoolFollowerTest : public ::testing::Test {
 protected:
  SharedPoolFollowerTest() {
    runtime::v1::PodSandboxConfig config;
    config.mutable_metadata()->set_uid("uid-1");
    sandbox_ = runtime_.addSandbox(config);
    runtime::v1::ContainerConfig web;
    web.mutable_metadata()->set_name("web");
    container_ = runtime_.addContainer(sandbox_, web, runtime::v1::CONTAINER_RUNNING);
    vrid_.holdPod("uid-1", sandbox_, {{"web", container_}});
  }
  std::unique_ptr<SharedPoolFollower> follower(int workers = 2) {
    SharedPoolFollowerOptions options;
    options.clock = &clock_;
    options.retryAfter = std::chrono::milliseconds(500);
    options.workers = workers;
    return std::make_unique<SharedPoolFollower>(vrid_, runtime_, options);
  }
  // vrid's pods as the connection hands them over.
  void follow(SharedPoolFollower& f) {
    auto tenants = vrid_.listPods(CallScope::within(std::chrono::seconds(1)));
    ASSERT_TRUE(tenants.ok());
    if (f.take(tenants->sequence())) f.follow(*tenants);
  }
  std::vector<std::string> cpusSent() {
    std::vector<std::string> out;
    for (const auto& update : runtime_.updates()) out.push_back(update.linux().cpuset_cpus());
    return out;
  }

  testing::ManualClock clock_;
  testing::FakeRuntime runtime_;
  testing::FakeVrid vrid_;
  std::string sandbox_, container_;
};

TEST_F(SharedPoolFollowerTest, TheLatestValueWinsAndOneUpdatePerContainerIsInFlight) {
  auto f = follower();
  runtime_.holdUpdates();
  vrid_.setSharedCpus("0-7");
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return runtime_.updates().size() == 1; }));  // in flight, held
  vrid_.setSharedCpus("0-5");
  follow(*f);
  vrid_.setSharedCpus("0-3");
  follow(*f);
  runtime_.releaseUpdates();
  ASSERT_TRUE(testing::eventually([&] { return f->idle() && f->updatesApplied() == 2; }));
  // The queued request reads vrid's values when it goes: 0-5 was never sent.
  EXPECT_THAT(cpusSent(), ElementsAre("0-7", "0-3"));
  EXPECT_EQ(runtime_.mostUpdatesAtOnce(), 1);
  EXPECT_EQ(runtime_.resourcesOf(container_).cpuset_cpus(), "0-3");
}

TEST_F(SharedPoolFollowerTest, AListOlderThanOneTakenIsDroppedUntilANewStreamStartsTheOrderAgain) {
  auto f = follower();
  EXPECT_TRUE(f->take(7));
  EXPECT_FALSE(f->take(5));
  EXPECT_TRUE(f->take(7));
  f->restart();  // a new vrid counts from zero
  EXPECT_TRUE(f->take(2));
}

TEST_F(SharedPoolFollowerTest, ValuesTheRuntimeHoldsAlreadyAreNotSentAgain) {
  auto f = follower();
  vrid_.setSharedCpus("1-2");
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return f->idle() && f->updatesApplied() == 1; }));
  vrid_.setSharedCpus("1-2");  // a new decision, the same pool
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return f->idle(); }));
  EXPECT_THAT(runtime_.updates(), SizeIs(1));
}

TEST_F(SharedPoolFollowerTest, NotFoundEndsTheFollowingOfAContainerThatIsGone) {
  auto f = follower();
  ASSERT_TRUE(runtime_.removeContainer(CallScope::within(std::chrono::seconds(1)), container_).ok());
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return f->idle(); }));
  clock_.advance(std::chrono::seconds(5));  // nothing waits to try again
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return f->idle(); }));
  EXPECT_EQ(f->updatesApplied(), 0u);
  EXPECT_TRUE(runtime_.updates().empty());  // the status said NotFound first: no update was tried
}

TEST_F(SharedPoolFollowerTest, AFailedUpdateIsTriedAgainWhenTheClockSaysSo) {
  auto f = follower();
  runtime_.failNext("UpdateContainerResources", Error(ErrorCode::kUnavailable, "containerd restarting"));
  vrid_.setSharedCpus("3");
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return runtime_.updates().size() == 1; }));
  EXPECT_EQ(f->updatesApplied(), 0u);
  ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));  // waiting to retry
  clock_.advance(std::chrono::milliseconds(500));
  ASSERT_TRUE(testing::eventually([&] { return f->updatesApplied() == 1 && f->idle(); }));
  EXPECT_THAT(cpusSent(), ElementsAre("3", "3"));
}

// vrid not answering where a container is now is not the container being released: the update
// waits and is tried again, as a failed update to the runtime is.
TEST_F(SharedPoolFollowerTest, AVridThatDoesNotSayIsAskedAgainWhenTheClockSaysSo) {
  auto f = follower();
  vrid_.setSharedCpus("3");
  auto tenants = vrid_.listPods(CallScope::within(std::chrono::seconds(1)));
  ASSERT_TRUE(tenants.ok());
  vrid_.refuseNext("GetTenant", Error(ErrorCode::kUnavailable, "vrid restarting"));
  ASSERT_TRUE(f->take(tenants->sequence()));
  f->follow(*tenants);
  ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));  // waiting to retry
  EXPECT_TRUE(runtime_.updates().empty());
  clock_.advance(std::chrono::milliseconds(500));
  ASSERT_TRUE(testing::eventually([&] { return f->updatesApplied() == 1 && f->idle(); }));
  EXPECT_THAT(cpusSent(), ElementsAre("3"));
}

TEST_F(SharedPoolFollowerTest, AStopDoesNotWaitForARetry) {
  auto f = follower();
  runtime_.failNext("UpdateContainerResources", Error(ErrorCode::kUnavailable, "containerd restarting"));
  follow(*f);
  ASSERT_TRUE(testing::eventually([&] { return clock_.nextDeadline().has_value(); }));
  const auto before = std::chrono::steady_clock::now();
  f.reset();  // the clock never reaches the retry
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(2));
  EXPECT_THAT(runtime_.updates(), SizeIs(1));
}

}  // namespace
}  // namespace vri
