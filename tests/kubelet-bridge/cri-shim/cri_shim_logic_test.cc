// The CRI shim's calls through the fakes (tests/support/fake_runtime.h,
// fake_vrid.h): refusals carried with their codes, undo after a failed create
// or bind, and the facts the shim hands vrid. The same calls against a real
// containerd and vrid are tests/containerd/cri_shim_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kubelet-bridge/cri-shim/cri_shim.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

namespace kubelet = cri_client;

class CriShimLogicTest : public ::testing::Test {
 protected:
  CriShimLogicTest() : shim_(runtime_, vrid_, options()) {}

  CriShimOptions options() {
    CriShimOptions o;
    o.log = [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_ += line + "\n";
    };
    return o;
  }
  static CallScope kubeletCall() { return CallScope::within(std::chrono::seconds(5)); }
  runtime::v1::PodSandboxConfig pod(const std::string& uid) {
    return kubelet::sandboxConfig(uid, "pod-" + uid, kubelet::podCgroupParent("/", kubelet::PodQos::kBurstable, uid));
  }
  std::string run(const runtime::v1::PodSandboxConfig& config) {
    runtime::v1::RunPodSandboxRequest request;
    *request.mutable_config() = config;
    auto ran = shim_.runPodSandbox(kubeletCall(), request);
    EXPECT_TRUE(ran.ok()) << ran.error().message();
    return ran.ok() ? ran->pod_sandbox_id() : "";
  }
  runtime::v1::CreateContainerRequest create(const std::string& sandbox, const runtime::v1::PodSandboxConfig& config,
                                             const std::string& name) {
    runtime::v1::CreateContainerRequest request;
    request.set_pod_sandbox_id(sandbox);
    *request.mutable_sandbox_config() = config;
    *request.mutable_config() = kubelet::containerConfig(config, name, kubelet::kubeletResources(250, 0, 64 << 20));
    return request;
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }

  testing::FakeRuntime runtime_;
  testing::FakeVrid vrid_;
  std::mutex logMutex_;
  std::string log_;
  CriShim shim_;
};

TEST_F(CriShimLogicTest, AContainerIsCreatedWithVridsAllocationAndBoundToItsId) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  vrid_.setSharedCpus("2-5");
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok()) << created.error().message();
  const auto resources = runtime_.resourcesOf(created->container_id());
  EXPECT_EQ(resources.cpuset_cpus(), "2-5");
  EXPECT_EQ(resources.cpuset_mems(), "0");                // every memory node vrid reports
  EXPECT_EQ(resources.unified().at("cpu.weight"), "39");  // vrid says the node is on cgroup v2
  const auto admits = vrid_.containerAdmits();
  ASSERT_EQ(admits.size(), 2u);  // allocate, then bind
  // The shim hands over facts, not conclusions: the pod's cgroup parent, no QoS class of its own.
  EXPECT_EQ(admits[0].cgroup_parent(), config.linux().cgroup_parent());
  EXPECT_EQ(admits[0].qos(), v1::QOS_UNSPECIFIED);
  EXPECT_EQ(admits[1].container_id(), created->container_id());
}

TEST_F(CriShimLogicTest, AStartedContainerIsWrittenByVridOnceTheRuntimeStartedIt) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok()) << created.error().message();
  const std::string id = created->container_id();
  // By a unique prefix, as crictl start takes it: vrid is told the whole id, after the runtime's start.
  ASSERT_TRUE(shim_.startContainer(kubeletCall(), id.substr(0, 12)).ok());
  EXPECT_THAT(vrid_.startedContainers(), ElementsAre(id));
  const auto calls = runtime_.calls();
  EXPECT_THAT(calls, Contains("StartContainer"));
  // A vrid that cannot write it leaves the container running, and says so; reconcile repairs it.
  vrid_.refuseNext("ContainerStarted", Error(ErrorCode::kUnavailable, "vrid is restarting"));
  EXPECT_TRUE(shim_.startContainer(kubeletCall(), id).ok());
  EXPECT_THAT(log(), HasSubstr("vrid did not write its cgroups (vrid is restarting); reconcile repairs them"));
  // A container vrid does not hold (created before the shim ran): started, nothing said.
  runtime::v1::CreateContainerRequest foreign = create(sandbox, config, "other");
  auto made = runtime_.createContainer(kubeletCall(), foreign);
  ASSERT_TRUE(made.ok());
  const std::string before = log();
  EXPECT_TRUE(shim_.startContainer(kubeletCall(), made->container_id()).ok());
  EXPECT_EQ(log(), before);
  // One the runtime cannot start: its error, and vrid is not asked.
  const size_t asked = vrid_.startedContainers().size();
  const auto missing = shim_.startContainer(kubeletCall(), std::string(64, 'f'));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(vrid_.startedContainers().size(), asked);
}

TEST_F(CriShimLogicTest, VridsRefusalComesBackWithItsCodeAndNothingIsCreated) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  vrid_.refuseNext("AdmitContainer", Error::resourceExhausted("2 CPUs asked, 1 free"));
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_THAT(created.error().message(), HasSubstr("2 CPUs asked, 1 free"));
  EXPECT_THAT(runtime_.calls(), Not(Contains("CreateContainer")));
}

TEST_F(CriShimLogicTest, AnUnreachableVridIsUnavailableSayingNothingWasCreated) {
  vrid_.refuseNext("AdmitPod", Error(ErrorCode::kDeadlineExceeded, "deadline exceeded"));
  runtime::v1::RunPodSandboxRequest request;
  *request.mutable_config() = pod("uid-1");
  auto ran = shim_.runPodSandbox(kubeletCall(), request);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(ran.error().message(), HasSubstr("vrid did not answer"));
  EXPECT_THAT(runtime_.calls(), Not(Contains("RunPodSandbox")));
}

// A Guaranteed pod's grant narrows the shared pool while a shared container is being created:
// vrid's bind answers with the pool as it is then, and the runtime gets it before the start.
// (Found with a real kubelet starting two pods at once; the follower cannot see a container
// whose id vrid does not know yet.)
TEST_F(CriShimLogicTest, ASharedContainerCreatedWhileThePoolShrinksGetsThePoolAsTheBindFindsIt) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  vrid_.setSharedCpus("0-3");
  runtime_.duringNextCreate([&] { vrid_.setSharedCpus("0,2-3"); });
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok()) << created.error().message();
  EXPECT_EQ(runtime_.resourcesOf(created->container_id()).cpuset_cpus(), "0,2-3");
  ASSERT_EQ(runtime_.updates().size(), 1u);
  EXPECT_EQ(runtime_.updates()[0].container_id(), created->container_id());
  EXPECT_THAT(log(), HasSubstr("the shared pool changed while it was created, CPUs 0-3 -> 0,2-3"));

  // An update the runtime refuses takes the container down again: nothing runs on the old pool.
  runtime_.duringNextCreate([&] {
    vrid_.setSharedCpus("0");
    runtime_.failNext("UpdateContainerResources", Error(ErrorCode::kUnavailable, "runtime restarting"));
  });
  auto refused = shim_.createContainer(kubeletCall(), create(sandbox, config, "second"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(runtime_.calls(), Contains("RemoveContainer"));
}

// kubelet takes its cgroup driver from RuntimeConfig: the runtime's answer reaches it only when
// the driver is vrid's (the fake vrid's node runs cgroupfs).
TEST_F(CriShimLogicTest, RuntimeConfigPassesTheRuntimesAnswerOnlyWhenItsCgroupDriverIsVrids) {
  runtime_.setCgroupDriver(runtime::v1::CGROUPFS);
  auto agreed = shim_.runtimeConfig(kubeletCall());
  ASSERT_TRUE(agreed.ok()) << agreed.error().message();
  EXPECT_EQ(agreed->linux().cgroup_driver(), runtime::v1::CGROUPFS);

  runtime_.setCgroupDriver(runtime::v1::SYSTEMD);
  auto refused = shim_.runtimeConfig(kubeletCall());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(refused.error().message(),
              HasSubstr("the runtime runs with the systemd cgroup driver, vrid with cgroupfs"));

  // Without vrid there is nothing to check against: kubelet waits, as for every pod.
  runtime_.setCgroupDriver(runtime::v1::CGROUPFS);
  vrid_.refuseNext("GetNode", Error(ErrorCode::kUnavailable, "connection refused"));
  auto unchecked = shim_.runtimeConfig(kubeletCall());
  ASSERT_FALSE(unchecked.ok());
  EXPECT_EQ(unchecked.error().code(), ErrorCode::kUnavailable);

  // A runtime without RuntimeConfig (containerd 1.x): its answer as it is, vrid not asked.
  runtime_.failNext("RuntimeConfig", Error(ErrorCode::kUnimplemented, "unknown method RuntimeConfig"));
  const size_t asked = vrid_.calls().size();
  auto older = shim_.runtimeConfig(kubeletCall());
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().code(), ErrorCode::kUnimplemented);
  EXPECT_EQ(older.error().message(), "unknown method RuntimeConfig");
  EXPECT_EQ(vrid_.calls().size(), asked);
}

TEST_F(CriShimLogicTest, AFailedCreateIsUndoneInVridAndTheRuntimesErrorKeepsItsCode) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  runtime_.failNext("CreateContainer", Error(ErrorCode::kAborted, "image pull aborted"));
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ErrorCode::kAborted);
  const auto releases = vrid_.containerReleases();
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].container_name(), "app");
  EXPECT_TRUE(releases[0].only_unbound());
  auto tenant = vrid_.getPod(kubeletCall(), "uid-1");
  ASSERT_TRUE(tenant.ok());  // the pod keeps its sandbox
  EXPECT_TRUE(tenant->pod().containers().empty());
}

TEST_F(CriShimLogicTest, ABindVridRefusesTakesTheContainerDownAgainAndUndoesTheAdmit) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  vrid_.refuseNext("AdmitContainer", Error(ErrorCode::kAlreadyExists, "id is another container's"), 1);  // the bind
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ErrorCode::kAlreadyExists);
  EXPECT_THAT(runtime_.calls(), Contains("RemoveContainer"));
  ASSERT_EQ(vrid_.containerReleases().size(), 1u);
  EXPECT_TRUE(vrid_.containerReleases()[0].only_unbound());
  EXPECT_THAT(*runtime_.listContainers(kubeletCall(), ""), IsEmpty());
}

TEST_F(CriShimLogicTest, ASandboxVridCannotBindIsStoppedRemovedAndItsPodUndone) {
  vrid_.refuseNext("AdmitPod", Error(ErrorCode::kUnavailable, "vrid restarting"), 1);
  runtime::v1::RunPodSandboxRequest request;
  *request.mutable_config() = pod("uid-1");
  auto ran = shim_.runPodSandbox(kubeletCall(), request);
  ASSERT_FALSE(ran.ok());
  EXPECT_EQ(ran.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(runtime_.calls(), ElementsAre("RunPodSandbox", "StopPodSandbox", "RemovePodSandbox"));
  ASSERT_EQ(vrid_.podReleases().size(), 1u);
  EXPECT_TRUE(vrid_.podReleases()[0].only_unbound());
  EXPECT_FALSE(vrid_.holds("uid-1"));
}

TEST_F(CriShimLogicTest, AnUndoThatFailsIsLogged) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  runtime_.failNext("CreateContainer", Error::internal("disk full"));
  vrid_.refuseNext("ReleaseContainer", Error(ErrorCode::kUnavailable, "vrid gone"));
  EXPECT_FALSE(shim_.createContainer(kubeletCall(), create(sandbox, config, "app")).ok());
  EXPECT_THAT(log(), HasSubstr("undo default/pod-uid-1/app failed: vrid gone"));
}

TEST_F(CriShimLogicTest, EveryCreateTellsVridWhichOfThePodsContainersFinished) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  runtime_.addContainer(sandbox, kubelet::containerConfig(config, "init", kubelet::kubeletResources(250, 0, 0)),
                        runtime::v1::CONTAINER_EXITED, 0);
  runtime_.addContainer(sandbox, kubelet::containerConfig(config, "failed", kubelet::kubeletResources(250, 0, 0)),
                        runtime::v1::CONTAINER_EXITED, 1);
  // A Burstable container too: whether finished containers matter is vrid's to say.
  ASSERT_TRUE(shim_.createContainer(kubeletCall(), create(sandbox, config, "app")).ok());
  EXPECT_THAT(vrid_.containerAdmits()[0].finished_containers(), ElementsAre("init"));
}

TEST_F(CriShimLogicTest, RemovalsReleaseByRuntimeIdAndARetryAfterVridFailedReleasesThen) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok());
  vrid_.refuseNext("ReleaseContainer", Error(ErrorCode::kUnavailable, "vrid restarting"));
  auto removed = shim_.removeContainer(kubeletCall(), created->container_id());
  ASSERT_FALSE(removed.ok());
  EXPECT_EQ(removed.error().code(), ErrorCode::kUnavailable);
  EXPECT_THAT(removed.error().message(), HasSubstr("retry"));
  ASSERT_TRUE(shim_.removeContainer(kubeletCall(), created->container_id()).ok());  // kubelet's retry
  EXPECT_THAT(log(), HasSubstr("RemoveContainer " + created->container_id() + ": released"));
  ASSERT_TRUE(shim_.removePodSandbox(kubeletCall(), sandbox).ok());
  EXPECT_FALSE(vrid_.holds("uid-1"));
}

TEST_F(CriShimLogicTest, AResizeTheRuntimeRefusesIsUndoneInVrid) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok());
  runtime_.failNext("UpdateContainerResources", Error::invalidArgument("quota below period"));
  runtime::v1::UpdateContainerResourcesRequest update;
  update.set_container_id(created->container_id());
  *update.mutable_linux() = kubelet::kubeletResources(500, 0, 64 << 20);
  auto resized = shim_.updateContainerResources(kubeletCall(), update);
  ASSERT_FALSE(resized.ok());
  EXPECT_EQ(resized.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(vrid_.calls(), Contains("ResizeContainer").Times(2));  // the resize, and its undo
  EXPECT_THAT(log(), HasSubstr("the runtime refused it; vrid's resize undone"));
}

// A unique prefix of an id, as containerd takes it, is the whole id to vrid too: a resize by prefix is
// vrid's, and removals by prefix release.
TEST_F(CriShimLogicTest, AUniquePrefixOfAnIdIsTheWholeIdToVridAsToTheRuntime) {
  const auto config = pod("uid-1");
  const std::string sandbox = run(config);
  auto created = shim_.createContainer(kubeletCall(), create(sandbox, config, "app"));
  ASSERT_TRUE(created.ok());
  const std::string id = created->container_id();
  const std::string prefix = id.substr(0, id.size() - 1);
  runtime::v1::UpdateContainerResourcesRequest update;
  update.set_container_id(prefix);
  *update.mutable_linux() = kubelet::kubeletResources(500, 0, 64 << 20);
  ASSERT_TRUE(shim_.updateContainerResources(kubeletCall(), update).ok());
  EXPECT_THAT(vrid_.calls(), Contains("ResizeContainer"));
  EXPECT_THAT(log(), Not(HasSubstr("not known to vrid")));
  ASSERT_TRUE(shim_.removeContainer(kubeletCall(), prefix).ok());
  EXPECT_THAT(log(), HasSubstr("RemoveContainer " + id + ": released"));
  ASSERT_TRUE(shim_.removePodSandbox(kubeletCall(), sandbox.substr(0, sandbox.size() - 1)).ok());
  EXPECT_THAT(log(), HasSubstr("RemovePodSandbox " + sandbox + ": released"));
  EXPECT_FALSE(vrid_.holds("uid-1"));
}

}  // namespace
}  // namespace vri
