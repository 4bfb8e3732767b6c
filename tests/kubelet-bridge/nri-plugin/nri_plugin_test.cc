// vri-nri-plugin's life cycle against a runtime peer on a real unix socket (the runtime's NRI side,
// tests/support/nri_runtime_peer.h) and vrid in memory (fake_vrid.h): registration, Configure's
// event mask, Synchronize in parts judged by the ledger sync (adopting what vrid does not know,
// releasing what is gone), releases on removal, and a new session when the runtime restarts. The
// same against a real containerd 2.x is tests/containerd/nri_plugin_test.cc.
#include "kubelet-bridge/nri-plugin/nri_plugin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "nri/runtime_versions.h"
#include "tests/kubelet-bridge/nri-plugin/nri_plugin_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/written_kubelet.h"

namespace vri {
namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using ::testing::HasSubstr;

using testing::kPlugin;
using testing::kUid;
using testing::NriPluginTest;
using testing::nriPod;

TEST(NriEventMaskTest, ThePodAndContainerEventsAsNrisBitsForEveryRuntime) {
  int32_t handled = 0;
  for (api::Event event : {api::RUN_POD_SANDBOX, api::STOP_POD_SANDBOX, api::REMOVE_POD_SANDBOX, api::CREATE_CONTAINER,
                           api::START_CONTAINER, api::UPDATE_CONTAINER, api::STOP_CONTAINER, api::REMOVE_CONTAINER}) {
    handled |= 1 << (event - 1);
  }
  EXPECT_EQ(nriEventMask(NriPlugin::eventsHandled(), "containerd", "v2.2.9").value(), handled);
  EXPECT_EQ(nriEventMask(NriPlugin::eventsHandled(), "containerd", "2.0.5").value(), handled);
  EXPECT_EQ(nriEventMask(NriPlugin::eventsHandled(), "cri-o", "1.30.0").value(), handled);
  EXPECT_EQ(nriEventMask(NriPlugin::eventsHandled(), "containerd", "v2.4.2", "v0.12.3").value(), handled);
  EXPECT_EQ(handled, 0x6af);
}

TEST_F(NriPluginTest, RegistersSynchronizesInPartsAdoptsWhatRunsAndReleasesWhatIsGone) {
  vrid_.setSharedCpus("0-3");  // where the fake places what it adopts: the CPUs it runs on
  // vrid holds a pod whose sandbox the runtime no longer has.
  vrid_.holdPod("0b1c2d3e-0000-4000-8000-0000000000ff", "gone-sandbox", {});
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  const uint32_t registering = registration(*runtime, configured);
  EXPECT_EQ(configured.events(), 0x6af);  // the pod and container events NriPlacement handles

  api::SynchronizeRequest first;
  *first.add_pods() = nriPod("sb1", kUid);
  first.set_more(true);
  ASSERT_TRUE(runtime->request(3, kPlugin, "Synchronize", first.SerializeAsString()));
  api::SynchronizeResponse partial;
  ASSERT_TRUE(partial.ParseFromString(replyTo(*runtime, 3).payload()));
  EXPECT_TRUE(partial.more());
  EXPECT_FALSE(vrid_.holds(kUid));  // judged once all parts are in

  api::SynchronizeRequest rest;
  api::Container* app = rest.add_containers();
  app->set_id("c1");
  app->set_pod_sandbox_id("sb1");
  app->set_name("app");
  app->set_state(api::CONTAINER_RUNNING);
  (*app->mutable_labels())["io.kubernetes.container.name"] = "app";
  (*app->mutable_labels())["io.kubernetes.pod.uid"] = kUid;
  app->mutable_linux()->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(256);
  app->mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("0-3");
  ASSERT_TRUE(runtime->request(5, kPlugin, "Synchronize", rest.SerializeAsString()));
  api::SynchronizeResponse done;
  ASSERT_TRUE(done.ParseFromString(replyTo(*runtime, 5).payload()));
  EXPECT_FALSE(done.more());
  // What runs keeps its CPUs: an update, if any, brings the runtime's record to vrid's other values.
  for (const api::ContainerUpdate& update : done.update()) {
    EXPECT_EQ(update.linux().resources().cpu().cpus(), "0-3") << update.DebugString();
  }
  ASSERT_TRUE(runtime->respond(registering, api::Empty().SerializeAsString()));

  EXPECT_TRUE(vrid_.holds(kUid));                                     // adopted with its sandbox
  EXPECT_FALSE(vrid_.holds("0b1c2d3e-0000-4000-8000-0000000000ff"));  // released: its sandbox is gone
  const auto admits = vrid_.containerAdmits();
  ASSERT_FALSE(admits.empty());
  EXPECT_EQ(admits.back().container_id(), "c1");
  EXPECT_EQ(admits.back().running_cpus(), "0-3");

  // The runtime removes the container: released by its id.
  api::StateChangeEvent removed;
  removed.set_event(api::REMOVE_CONTAINER);
  *removed.mutable_pod() = nriPod("sb1", kUid);
  removed.mutable_container()->set_id("c1");
  removed.mutable_container()->set_name("app");
  ASSERT_TRUE(runtime->request(7, kPlugin, "StateChange", removed.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 7).status().code(), 0);
  ASSERT_FALSE(vrid_.containerReleases().empty());
  EXPECT_EQ(vrid_.containerReleases().back().container_id(), "c1");
  // Logged once the plugin has read the registration's answer, on its own thread.
  EXPECT_TRUE(testing::eventually([&] {
    return log().find("registered with the runtime's NRI as 50-vri") != std::string::npos;
  })) << log();
  EXPECT_THAT(log(), HasSubstr("configured by containerd v2.2.9 (events 0x6af)"));
}

// NRI v0.12 calls RemovePodSandbox and RemoveContainer, and falls back to StateChange only for a
// plugin that answers UNIMPLEMENTED (and logs it as deprecated).
TEST_F(NriPluginTest, NriV012sRemovalMethodsReleaseByIdAsStateChangeDoes) {
  vrid_.holdPod(kUid, "sb1", {{"app", "c1"}});
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  const uint32_t registering = registration(*runtime, configured);
  api::SynchronizeRequest running;  // what vrid holds still runs
  *running.add_pods() = nriPod("sb1", kUid);
  api::Container* app = running.add_containers();
  app->set_id("c1");
  app->set_pod_sandbox_id("sb1");
  app->set_name("app");
  app->set_state(api::CONTAINER_RUNNING);
  (*app->mutable_labels())["io.kubernetes.container.name"] = "app";
  (*app->mutable_labels())["io.kubernetes.pod.uid"] = kUid;
  ASSERT_TRUE(runtime->request(3, kPlugin, "Synchronize", running.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 3).status().code(), 0);
  ASSERT_TRUE(runtime->respond(registering, api::Empty().SerializeAsString()));
  ASSERT_TRUE(vrid_.holds(kUid)) << log();
  ASSERT_TRUE(vrid_.containerReleases().empty()) << log();

  // Its start (the runtime made its task, the process waits): vrid writes its cgroups, as a method
  // (NRI v0.12) or in a StateChange (before), and the start is never refused.
  api::StartContainerRequest started;
  *started.mutable_pod() = nriPod("sb1", kUid);
  *started.mutable_container() = *app;
  ASSERT_TRUE(runtime->request(11, kPlugin, "StartContainer", started.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 11).status().code(), 0);
  api::StateChangeEvent change;
  change.set_event(api::START_CONTAINER);
  *change.mutable_pod() = nriPod("sb1", kUid);
  *change.mutable_container() = *app;
  vrid_.refuseNext("ContainerStarted", Error(ErrorCode::kUnavailable, "vrid is restarting"));
  ASSERT_TRUE(runtime->request(13, kPlugin, "StateChange", change.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 13).status().code(), 0);
  EXPECT_THAT(vrid_.startedContainers(), ::testing::ElementsAre("c1", "c1"));
  EXPECT_THAT(log(), HasSubstr("vrid did not write its cgroups (vrid is restarting); reconcile repairs them"));

  api::RemoveContainerRequest container;
  *container.mutable_pod() = nriPod("sb1", kUid);
  container.mutable_container()->set_id("c1");
  container.mutable_container()->set_name("app");
  ASSERT_TRUE(runtime->request(5, kPlugin, "RemoveContainer", container.SerializeAsString()));
  const ttrpc::Response containerAnswer = replyTo(*runtime, 5);
  EXPECT_EQ(containerAnswer.status().code(), 0) << containerAnswer.status().message();
  api::RemoveContainerResponse parsedContainerAnswer;
  EXPECT_TRUE(parsedContainerAnswer.ParseFromString(containerAnswer.payload()));
  ASSERT_EQ(vrid_.containerReleases().size(), 1u);
  EXPECT_EQ(vrid_.containerReleases().back().container_id(), "c1");

  api::RemovePodSandboxRequest pod;
  *pod.mutable_pod() = nriPod("sb1", kUid);
  ASSERT_TRUE(runtime->request(7, kPlugin, "RemovePodSandbox", pod.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 7).status().code(), 0);
  EXPECT_FALSE(vrid_.holds(kUid));
  EXPECT_THAT(log(), HasSubstr("pod default/p-0a removed by the runtime; released"));

  // A method of an event the plugin did not subscribe to is UNIMPLEMENTED, so NRI falls back.
  ASSERT_TRUE(runtime->request(9, kPlugin, "PostStartContainer", api::PostStartContainerRequest().SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 9).status().code(), 12);  // google.rpc.Code UNIMPLEMENTED
}

// NRI's StopPodSandbox, as a method (NRI v0.12) or in a StateChange, hands the sandbox to the
// releaser, which releases the pod once kubelet no longer lists it; RemovePodSandbox ends the wait.
class NriPluginReleaserTest : public NriPluginTest {
 protected:
  StoppedPodReleaser* releaser() override { return &releaser_; }
  testing::WrittenKubelet kubelet_;
  StoppedPodReleaser releaser_{vrid_, kubelet_, {}};
};

TEST_F(NriPluginReleaserTest, AStoppedSandboxWaitsForKubeletAndARemovedOneDoesNot) {
  vrid_.holdPod(kUid, "sb1", {});
  vrid_.holdPod("uid-2", "sb2", {});
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  ASSERT_NO_FATAL_FAILURE(registerWithNothingRunning(*runtime));
  vrid_.holdPod(kUid, "sb1", {});  // the synchronize released what the runtime did not report
  vrid_.holdPod("uid-2", "sb2", {});

  api::StopPodSandboxRequest stop;
  *stop.mutable_pod() = nriPod("sb1", kUid);
  ASSERT_TRUE(runtime->request(5, kPlugin, "StopPodSandbox", stop.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 5).status().code(), 0);
  api::StateChangeEvent stopped;
  stopped.set_event(api::STOP_POD_SANDBOX);
  *stopped.mutable_pod() = nriPod("sb2", "uid-2");
  ASSERT_TRUE(runtime->request(7, kPlugin, "StateChange", stopped.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 7).status().code(), 0);
  EXPECT_EQ(releaser_.waiting(), 2u);

  api::RemovePodSandboxRequest removed;
  *removed.mutable_pod() = nriPod("sb2", "uid-2");
  ASSERT_TRUE(runtime->request(9, kPlugin, "RemovePodSandbox", removed.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 9).status().code(), 0);
  EXPECT_EQ(releaser_.waiting(), 1u);
  EXPECT_TRUE(vrid_.holds(kUid));
  for (int i = 0; i < 3; ++i) releaser_.poll();
  EXPECT_FALSE(vrid_.holds(kUid));
}

// RunPodSandbox, StopContainer, CreateContainer and UpdateContainer through the plugin, with vrid
// in memory: what vrid is asked, and what the runtime is answered.
TEST_F(NriPluginTest, PodsAndContainersArePlacedThroughNriAsTheShimPlacesThem) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  ASSERT_NO_FATAL_FAILURE(registerWithNothingRunning(*runtime));
  vrid_.setSharedCpus("2-7");

  // RunPodSandbox: the pod, with its sandbox bound in the same admit.
  api::RunPodSandboxRequest run;
  *run.mutable_pod() = nriPod("sb1", kUid);
  ASSERT_TRUE(runtime->request(5, kPlugin, "RunPodSandbox", run.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 5).status().code(), 0);
  ASSERT_EQ(vrid_.podAdmits().size(), 1u);
  EXPECT_EQ(vrid_.podAdmits().back().sandbox_id(), "sb1");
  EXPECT_EQ(vrid_.podAdmits().back().pod_name(), "default/p-0a");
  EXPECT_EQ(vrid_.podAdmits().back().cgroup_parent(), run.pod().linux().cgroup_parent());

  // An init container ran and exited 0.
  api::StopContainerRequest stop;
  *stop.mutable_pod() = run.pod();
  stop.mutable_container()->set_id("init1");
  stop.mutable_container()->set_pod_sandbox_id("sb1");
  stop.mutable_container()->set_name("init");
  stop.mutable_container()->set_state(api::CONTAINER_STOPPED);
  stop.mutable_container()->set_finished_at(1);
  stop.mutable_container()->set_exit_code(0);
  ASSERT_TRUE(runtime->request(7, kPlugin, "StopContainer", stop.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 7).status().code(), 0);

  // CreateContainer: admitted with its id and the finished init container; vrid's allocation is
  // the adjustment, with full explicit values.
  api::CreateContainerRequest create;
  *create.mutable_pod() = run.pod();
  create.mutable_container()->set_id("c1");
  create.mutable_container()->set_pod_sandbox_id("sb1");
  create.mutable_container()->set_name("app");
  api::LinuxResources& asked = *create.mutable_container()->mutable_linux()->mutable_resources();
  asked.mutable_cpu()->mutable_shares()->set_value(512);  // 500m
  asked.mutable_cpu()->mutable_quota()->set_value(100000);
  asked.mutable_cpu()->mutable_period()->set_value(100000);  // a limit of 1 CPU
  asked.mutable_memory()->mutable_limit()->set_value(64 << 20);
  ASSERT_TRUE(runtime->request(9, kPlugin, "CreateContainer", create.SerializeAsString()));
  const ttrpc::Response created = replyTo(*runtime, 9);
  ASSERT_EQ(created.status().code(), 0) << created.status().message();
  api::CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(created.payload()));
  const api::LinuxResources& given = adjusted.adjust().linux().resources();
  EXPECT_EQ(given.cpu().cpus(), "2-7");
  EXPECT_EQ(given.cpu().mems(), "0");
  EXPECT_EQ(given.cpu().shares().value(), 1024u);  // vrid's values, not the asked ones
  EXPECT_EQ(given.cpu().period().value(), 100000u);
  EXPECT_EQ(given.cpu().quota().value(), -1);  // vrid set no quota
  EXPECT_EQ(given.unified().at("cpu.weight"), "39");
  EXPECT_EQ(given.memory().limit().value(), 64 << 20);  // vrid named no limit: the container's own
  ASSERT_FALSE(vrid_.containerAdmits().empty());
  const v1::AdmitContainerRequest admitted = vrid_.containerAdmits().back();
  EXPECT_EQ(admitted.container_id(), "c1");
  EXPECT_EQ(admitted.container_name(), "app");
  EXPECT_EQ(admitted.cpu_request_milli(), 500);
  EXPECT_EQ(admitted.cpu_limit_milli(), 1000);
  EXPECT_EQ(admitted.memory_limit_bytes(), 64u << 20);
  EXPECT_THAT(std::vector<std::string>(admitted.finished_containers().begin(), admitted.finished_containers().end()),
              ::testing::ElementsAre("init"));

  // UpdateContainer: resized through vrid and answered as an update of that container.
  api::UpdateContainerRequest update;
  *update.mutable_pod() = run.pod();
  *update.mutable_container() = create.container();
  update.mutable_linux_resources()->mutable_cpu()->mutable_shares()->set_value(1024);
  ASSERT_TRUE(runtime->request(11, kPlugin, "UpdateContainer", update.SerializeAsString()));
  const ttrpc::Response updatedAnswer = replyTo(*runtime, 11);
  ASSERT_EQ(updatedAnswer.status().code(), 0) << updatedAnswer.status().message();
  api::UpdateContainerResponse updated;
  ASSERT_TRUE(updated.ParseFromString(updatedAnswer.payload()));
  ASSERT_EQ(updated.update_size(), 1);
  EXPECT_EQ(updated.update(0).container_id(), "c1");
  EXPECT_EQ(updated.update(0).linux().resources().cpu().cpus(), "2-7");

  // vrid refuses the next container: the creation fails with vrid's code and "vri: <reason>".
  vrid_.refuseNext("AdmitContainer", Error(ErrorCode::kResourceExhausted, "2 exclusive CPUs asked, 1 free"));
  create.mutable_container()->set_id("c2");
  create.mutable_container()->set_name("big");
  ASSERT_TRUE(runtime->request(13, kPlugin, "CreateContainer", create.SerializeAsString()));
  const ttrpc::Response refused = replyTo(*runtime, 13);
  EXPECT_EQ(refused.status().code(), 8);  // RESOURCE_EXHAUSTED
  EXPECT_EQ(refused.status().message(), "vri: 2 exclusive CPUs asked, 1 free");

  // A container asking for a negative memory limit is refused before vrid is asked.
  const size_t admitsBefore = vrid_.containerAdmits().size();
  create.mutable_container()->set_id("c3");
  asked.mutable_memory()->mutable_limit()->set_value(-5);
  ASSERT_TRUE(runtime->request(15, kPlugin, "CreateContainer", create.SerializeAsString()));
  const ttrpc::Response invalid = replyTo(*runtime, 15);
  EXPECT_EQ(invalid.status().code(), 3);  // INVALID_ARGUMENT
  EXPECT_THAT(invalid.status().message(), ::testing::StartsWith("vri: config.linux.resources"));
  EXPECT_EQ(vrid_.containerAdmits().size(), admitsBefore);
}

// NRI serves one request at a time: one that waited behind a slow vrid past half the runtime's
// time is refused without asking vrid (the runtime has given up on it), while a removal that
// waited as long is still carried out.
TEST_F(NriPluginTest, ARequestThatWaitedPastItsTimeIsRefusedWithoutAskingVrid) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  ASSERT_NO_FATAL_FAILURE(registerWithNothingRunning(*runtime));
  vrid_.holdPod("00000000-0000-0000-0000-0000000000ff", "sb-old", {});
  vrid_.slowPodAdmits(std::chrono::milliseconds(300));

  const std::chrono::milliseconds runtimeTimeout(400);  // the plugin's share: 200 ms
  api::RunPodSandboxRequest first, second;
  *first.mutable_pod() = nriPod("sb1", kUid);
  *second.mutable_pod() = nriPod("sb2", "00000000-0000-0000-0000-00000000000b");
  api::RemovePodSandboxRequest remove;
  *remove.mutable_pod() = nriPod("sb-old", "00000000-0000-0000-0000-0000000000ff");
  ASSERT_TRUE(runtime->request(5, kPlugin, "RunPodSandbox", first.SerializeAsString(), runtimeTimeout));
  ASSERT_TRUE(runtime->request(7, kPlugin, "RunPodSandbox", second.SerializeAsString(), runtimeTimeout));
  ASSERT_TRUE(runtime->request(9, kPlugin, "RemovePodSandbox", remove.SerializeAsString(), runtimeTimeout));
  replyTo(*runtime, 5);
  const ttrpc::Response late = replyTo(*runtime, 7);
  EXPECT_EQ(late.status().code(), 4);  // DEADLINE_EXCEEDED
  EXPECT_THAT(late.status().message(), HasSubstr("queue, past its time; not placed"));
  EXPECT_EQ(replyTo(*runtime, 9).status().code(), 0);
  ASSERT_EQ(vrid_.podAdmits().size(), 1u) << "vrid was asked to place a pod the runtime had given up on";
  EXPECT_EQ(vrid_.podAdmits().front().sandbox_id(), "sb1");
  EXPECT_FALSE(vrid_.holds("00000000-0000-0000-0000-0000000000ff")) << "the late removal was not carried out";
  EXPECT_THAT(log(), HasSubstr("refused without asking vrid"));
}

// Synchronize's parts are kept until the last one: past 64 MiB of them the plugin refuses the
// synchronization instead of growing, and a later one of a sane size is judged as usual.
TEST_F(NriPluginTest, SynchronizePartsBeyondTheirBoundAreRefusedNotKept) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  registration(*runtime, configured);
  api::SynchronizeRequest part;
  for (int i = 0; i < 3; ++i) {
    api::PodSandbox* pod = part.add_pods();
    *pod = nriPod("sb" + std::to_string(i), kUid);
    (*pod->mutable_annotations())["bulk"] = std::string(1 << 20, 'x');
  }
  part.set_more(true);
  uint32_t stream = 3;
  int32_t code = 0;
  for (int i = 0; i < 30 && code == 0; ++i, stream += 2) {  // 3 MiB a part
    ASSERT_TRUE(runtime->request(stream, kPlugin, "Synchronize", part.SerializeAsString()));
    code = replyTo(*runtime, stream).status().code();
  }
  EXPECT_EQ(code, 8);  // RESOURCE_EXHAUSTED
  EXPECT_EQ(stream, 3u + 2 * 22) << "refused at the part that passed 64 MiB";
  EXPECT_THAT(log(), HasSubstr("Synchronize refused: more than 64 MiB in parts"));
  EXPECT_TRUE(vrid_.podAdmits().empty());
  ASSERT_TRUE(runtime->request(stream, kPlugin, "Synchronize", api::SynchronizeRequest().SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, stream).status().code(), 0);
  EXPECT_THAT(log(), HasSubstr("synchronized 0 pods"));
}

TEST_F(NriPluginTest, ARestartedRuntimeIsMetAgainAndBadBytesEndOnlyTheSession) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  ASSERT_NE(registration(*runtime, configured), 0u);
  runtime.reset();  // the runtime restarts

  runtime = accept();
  ASSERT_TRUE(runtime);
  ASSERT_NE(registration(*runtime, configured), 0u);
  ASSERT_TRUE(runtime->writeRaw(std::string("\0\0\0\0\0\0\0\1x", 9)));  // garbage from the runtime
  EXPECT_TRUE(runtime->closedByPlugin());
  EXPECT_THAT(log(), HasSubstr("reserved connection 0"));

  runtime = accept();  // and the plugin connects once more
  ASSERT_TRUE(runtime);
  ASSERT_NE(registration(*runtime, configured), 0u);
}

TEST_F(NriPluginTest, AnUnreachableVridFailsNoCallOfTheRuntimes) {
  vrid_.refuseNext("ListTenants", Error(ErrorCode::kUnavailable, "vrid is restarting"));
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  ASSERT_NE(registration(*runtime, configured), 0u);
  // Nothing asks vrid before the runtime's report is in: the shared pool is followed from the
  // first Synchronize on, knowing what the runtime holds.
  EXPECT_THAT(vrid_.calls(), ::testing::IsEmpty());
  api::SynchronizeRequest all;
  *all.add_pods() = nriPod("sb1", kUid);
  ASSERT_TRUE(runtime->request(3, kPlugin, "Synchronize", all.SerializeAsString()));
  EXPECT_EQ(replyTo(*runtime, 3).status().code(), 0);
  EXPECT_THAT(log(), HasSubstr("the ledger is not checked against the runtime this time"));
  EXPECT_FALSE(vrid_.holds(kUid));
  // Then the follower's first pass lists vrid's pods.
  EXPECT_TRUE(testing::eventually([&] {
    const auto calls = vrid_.calls();
    return std::count(calls.begin(), calls.end(), "ListTenants") == 2;
  }));
}

}  // namespace
}  // namespace vri
