// The scenarios that differ between the two ways kubelet's pods reach VRI, run for each way in the
// containerd under test has (kubelet_side_fixture.h): through vri-cri-shim in front of containerd,
// and (containerd 2) through vri-nri-plugin on containerd's NRI, with kubelet's calls made by the
// project's CRI client. Each placement is checked as the kernel enforces it, as the process runs,
// as containerd records it and as vrid holds it. What only one way does is tested beside it
// (cri_shim_test.cc, nri_plugin_test.cc, nri_failure_policy_test.cc).
#include <iostream>
#include <string>
#include <vector>

#include "tests/containerd/kubelet_side_fixture.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using testing::kUnderTest;
using testing::procStatusField;
using testing::WayIn;
using testing::WayInTest;
using Pod = testing::KubeletSideTest::Pod;
namespace cri = ::runtime::v1;
namespace cri_client = ::vri::cri_client;
using cri_client::PodQos;

TEST_P(WayInTest, AGuaranteedContainerGetsAnExclusiveCpuEveryoneAgreesOnAndABurstableOneTheSharedPool) {
  const Pod guaranteed = runPod(1, PodQos::kGuaranteed);
  EXPECT_EQ(podInfo(uid(1)).sandbox_id(), guaranteed.sandbox);  // admitted with its sandbox
  const std::string app = runContainer(guaranteed, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(app.empty());
  const std::string cpu = exclusiveOf(uid(1), "app");
  ASSERT_EQ(cpu.size(), 1u) << "one exclusive CPU, got '" << cpu << "'" << placerLog();
  const std::string shared = cpu == "0" ? "1" : "0";
  // The kernel: the container's cgroup and its process; containerd, with no quota left unset.
  EXPECT_EQ(cpusetOf(guaranteed.config.linux().cgroup_parent(), app), cpu);
  EXPECT_EQ(procStatusField(cri_->pid(app), "Cpus_allowed_list"), cpu);
  EXPECT_EQ(recorded(app, "cpus"), cpu);
  EXPECT_EQ(cri_->specCpus(app), cpu);  // what vri-cri-client ps shows
  EXPECT_EQ(recorded(app, "quota"), "100000");
  // vrid: the sandbox is bound and is not a container.
  const v1::PodInfo info = podInfo(uid(1));
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().id(), app);
  EXPECT_EQ(cpusetOf(guaranteed.config.linux().cgroup_parent(), guaranteed.sandbox), shared);
  std::string listed;
  ASSERT_EQ(testing::runCommand({VRICTL_BINARY, "--socket", vrid_->socket(), "list"}, &listed, tmp_.sub("out")), 0);
  EXPECT_THAT(listed, HasSubstr(uid(1)));
  EXPECT_THAT(listed, HasSubstr("app=" + cpu));

  const Pod burstable = runPod(2, PodQos::kBurstable);
  const std::string web = runContainer(burstable, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  EXPECT_EQ(exclusiveOf(uid(2), "web"), "");
  EXPECT_EQ(cpusetOf(burstable.config.linux().cgroup_parent(), web), shared);
  EXPECT_EQ(procStatusField(cri_->pid(web), "Cpus_allowed_list"), shared);
  EXPECT_EQ(recorded(web, "cpus"), shared);
  EXPECT_EQ(recorded(web, "shares"), "256");
  EXPECT_EQ(recorded(web, "quota"), "50000");
}

// One CPU is reserved and one taken: a second exclusive one is refused with vrid's reason, and
// neither containerd nor vrid keeps anything of it.
TEST_P(WayInTest, AContainerThatDoesNotFitIsRefusedWithTheReasonAndLeavesNothing) {
  const Pod first = runPod(1, PodQos::kGuaranteed);
  ASSERT_FALSE(runContainer(first, "app", cri_client::kubeletResources(1000, 1000, kMemory)).empty());
  const Pod second = runPod(2, PodQos::kGuaranteed);
  std::string id;
  const grpc::Status refused = cri_->createContainer(
      second.sandbox, second.config,
      cri_client::containerConfig(second.config, "app", cri_client::kubeletResources(1000, 1000, kMemory)), &id);
  ASSERT_FALSE(refused.ok());
  // The shim answers kubelet with vrid's code; containerd wraps a plugin's refusal in its own.
  if (way() == WayIn::kShim) {
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  EXPECT_THAT(refused.error_message(), HasSubstr("vri: "));
  EXPECT_THAT(refused.error_message(), HasSubstr("CPU"));
  cri::ListContainersResponse listed;
  ASSERT_TRUE(cri_->listContainers(uid(2), &listed).ok());
  EXPECT_EQ(listed.containers_size(), 0);                   // nothing in containerd
  EXPECT_EQ(podInfo(uid(2)).containers_size(), 0);          // nothing in vrid
  EXPECT_EQ(podInfo(uid(2)).sandbox_id(), second.sandbox);  // the pod itself stays admitted
  EXPECT_EQ(exclusiveOf(uid(1), "app").size(), 1u);
}

// A crash and kubelet's restart of the container, then of the whole sandbox, then deletion.
TEST_P(WayInTest, ACrashedContainerRecreatedKeepsItsCpuRemovingTheDeadOneFreesNothingAndDeletionReleases) {
  const Pod pod = runPod(1, PodQos::kGuaranteed);
  const std::string first = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory), {"exit", "1"});
  ASSERT_TRUE(cri_->waitFor(first, cri::CONTAINER_EXITED));
  const std::string cpu = exclusiveOf(uid(1), "app");
  ASSERT_EQ(cpu.size(), 1u);
  // kubelet: the replacement first, then garbage collection removes the dead one.
  const std::string second = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory), {}, 1);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(cpusetOf(pod.config.linux().cgroup_parent(), second), cpu);
  EXPECT_EQ(recorded(second, "cpus"), cpu);
  ASSERT_TRUE(cri_->removeContainer(first).ok());
  EXPECT_TRUE(cri_->removeContainer(first).ok());  // kubelet retries: idempotent
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(podInfo(uid(1)).containers(0).resources().id(), second);

  // The same for a sandbox: kubelet stops the pod, runs a new sandbox, then removes the old one.
  ASSERT_TRUE(cri_->stopContainer(second).ok());
  ASSERT_TRUE(cri_->stopPodSandbox(pod.sandbox).ok());
  const Pod again = runPod(1, PodQos::kGuaranteed, 1);
  const std::string third = runContainer(again, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(third.empty()) << placerLog();
  EXPECT_EQ(cpusetOf(pod.config.linux().cgroup_parent(), third), cpu);
  ASSERT_TRUE(cri_->removeContainer(second).ok());
  ASSERT_TRUE(cri_->removePodSandbox(pod.sandbox).ok());
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(podInfo(uid(1)).sandbox_id(), again.sandbox);

  // Deleting the current ones releases the pod (NRI relays the removals after containerd's own).
  ASSERT_TRUE(cri_->stopPodSandbox(again.sandbox).ok());
  ASSERT_TRUE(cri_->removeContainer(third).ok());
  ASSERT_TRUE(cri_->removePodSandbox(again.sandbox).ok());
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid(1)).uid().empty(); })) << placerLog();
}

// An init container of one CPU completes; the app container of one CPU runs on the same, the one
// free CPU. Through NRI the exit code comes with NRI's StopContainer (containerd 2.4) or from
// containerd's CRI (2.0, 2.2; nri_plugin_test.cc says which).
TEST_P(WayInTest, AnInitAndAnAppContainerOfOneCpuEachRunOnTheOneFreeCpu) {
  const Pod pod = runPod(1, PodQos::kGuaranteed);
  const std::string init = runContainer(pod, "setup", cri_client::kubeletResources(1000, 1000, kMemory), {"exit", "0"});
  ASSERT_TRUE(cri_->waitFor(init, cri::CONTAINER_EXITED));
  const std::string cpu = exclusiveOf(uid(1), "setup");
  ASSERT_EQ(cpu.size(), 1u);
  if (way() == WayIn::kNri && kUnderTest.flavour == "2.4") {
    // containerd relays the exit as StopContainer, on its own time.
    ASSERT_TRUE(testing::eventually([&] {
      return placerLog().find("container pod1/setup stopped (exit code 0)") != std::string::npos;
    })) << placerLog();
  }
  const std::string app = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(app.empty());
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(exclusiveOf(uid(1), "setup"), "");
  EXPECT_EQ(procStatusField(cri_->pid(app), "Cpus_allowed_list"), cpu);
  EXPECT_EQ(recorded(app, "cpus"), cpu);
  // The init container's record keeps what it ran with: nothing is sent for a container that exited.
  EXPECT_EQ(recorded(init, "cpus"), cpu);
  EXPECT_THAT(placerLog(), ::testing::Not(HasSubstr("container " + init.substr(0, 13))));
}

// A VM takes the free CPU and releases it: vrid narrows and widens the running shared container's
// cgroup before it answers, and the placer brings containerd's record in line. Through NRI before
// v0.12.1 (containerd 2.0, 2.2) the update rides on the plugin's next answer to containerd: here,
// the next container's creation.
TEST_P(WayInTest, AVmNarrowsASharedContainerInTheKernelAndInContainerdAndItsReleaseWidensIt) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  const std::string parent = pod.config.linux().cgroup_parent();
  ASSERT_EQ(cpusetOf(parent, web), "0-1");
  const bool ridesOnAnswers = way() == WayIn::kNri && kUnderTest.flavour != "2.4";
  int next = 2;
  const auto nextAnswer = [&] {
    if (!ridesOnAnswers) return;
    const Pod other = runPod(next++, PodQos::kBurstable);
    ASSERT_FALSE(runContainer(other, "tick", cri_client::kubeletResources(100, 0, kMemory)).empty());
  };

  const std::string uuid = "8f0c0c01-0000-4000-8000-000000000001";
  ASSERT_TRUE(admitVm(uuid).ok());
  EXPECT_EQ(cpusetOf(parent, web), "0");
  EXPECT_EQ(procStatusField(cri_->pid(web), "Cpus_allowed_list"), "0");
  nextAnswer();
  EXPECT_TRUE(testing::eventually([&] { return recorded(web, "cpus") == "0"; })) << recorded(web, "cpus");
  if (!ridesOnAnswers) {
    // The follower logs the update once the runtime has answered it, a moment after containerd shows it.
    const std::string followed = "shared pool: container " + web.substr(0, 13) + " now on CPUs 0 in the runtime too";
    EXPECT_TRUE(testing::eventually([&] { return placerLog().find(followed) != std::string::npos; })) << placerLog();
  }

  ASSERT_TRUE(releaseVm(uuid).ok());
  EXPECT_EQ(cpusetOf(parent, web), "0-1");
  EXPECT_EQ(procStatusField(cri_->pid(web), "Cpus_allowed_list"), "0-1");
  nextAnswer();
  EXPECT_TRUE(testing::eventually([&] { return recorded(web, "cpus") == "0-1"; })) << recorded(web, "cpus");
  // Two changes in a row: the container ends at the second.
  ASSERT_TRUE(admitVm(uuid).ok());
  ASSERT_TRUE(releaseVm(uuid).ok());
  nextAnswer();
  EXPECT_TRUE(testing::eventually([&] { return recorded(web, "cpus") == "0-1"; })) << recorded(web, "cpus");
  EXPECT_TRUE(testing::eventually(
      [&] { return cpusetOf(parent, web) == "0-1" && procStatusField(cri_->pid(web), "Cpus_allowed_list") == "0-1"; }));
}

TEST_P(WayInTest, RestartingThePlacerVridAndContainerdInTurnChangesNoCpuset) {
  const Pod guaranteed = runPod(1, PodQos::kGuaranteed);
  const std::string app = runContainer(guaranteed, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  const Pod burstable = runPod(2, PodQos::kBurstable);
  const std::string web = runContainer(burstable, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(app.empty());
  ASSERT_FALSE(web.empty());
  const auto cpusets = [&] {
    return std::vector<std::string>{cpusetOf(guaranteed.config.linux().cgroup_parent(), app),
                                    cpusetOf(guaranteed.config.linux().cgroup_parent(), guaranteed.sandbox),
                                    cpusetOf(burstable.config.linux().cgroup_parent(), web), recorded(app, "cpus"),
                                    recorded(web, "cpus")};
  };
  const std::vector<std::string> before = cpusets();
  ASSERT_EQ(before[0].size(), 1u);

  // The new placer follows vrid's events before vrid goes, or it would never have seen vrid away.
  const size_t following = testing::count(placerLog(), "following vrid's events");
  stopPlacer();
  startPlacer();
  ASSERT_TRUE(testing::eventually([&] { return testing::count(placerLog(), "following vrid's events") > following; }))
      << placerLog();
  // Through the shim, the client's connection to the old shim fails once ("Broken pipe"), as kubelet's
  // would; it then reconnects.
  ASSERT_TRUE(testing::eventually([&] { return !recorded(app, "cpus").starts_with("<error"); }));
  EXPECT_EQ(cpusets(), before) << "after the placer restarted";
  const size_t followed = testing::count(placerLog(), "following vrid's events again");
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  EXPECT_EQ(cpusets(), before) << "after vrid restarted";
  // The placer's pass over the new vrid's pool checks each shared container with containerd: done
  // before containerd goes, or it would try again (the same values) while containerd is away.
  ASSERT_TRUE(testing::eventually([&] {
    return testing::count(placerLog(), "following vrid's events again") > followed;
  })) << placerLog();
  const size_t registered = registrations();
  std::string out;
  ASSERT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + "/tests/containerd/containerd-fixture.sh", "restart",
                                 kUnderTest.flavour},
                                &out, tmp_.sub("out")),
            0)
      << out;
  if (way() == WayIn::kNri) {
    ASSERT_TRUE(awaitRegistrationAfter(registered)) << placerLog();
  }
  EXPECT_TRUE(testing::eventually([&] { return recorded(web, "cpus") == before[4]; }));
  EXPECT_EQ(cpusets(), before) << "after containerd restarted";
  EXPECT_EQ(exclusiveOf(uid(1), "app"), before[0]);
  EXPECT_EQ(podInfo(uid(2)).containers(0).resources().id(), web);
  // The placer found containerd in line with vrid at each start and updated nothing.
  EXPECT_THAT(placerLog(), ::testing::Not(HasSubstr("shared pool:")));
  EXPECT_THAT(placerLog(), ::testing::Not(HasSubstr("UpdateContainerResources")));
  if (way() == WayIn::kNri) {
    EXPECT_EQ(testing::count(placerLog(), "synchronized "), testing::count(placerLog(), " (0 updates)")) << placerLog();
  }
}

// Both ways, whatever the environment: CTest lists the tests without it (tests/CMakeLists.txt runs
// containerd 1.6's with the shim only).
INSTANTIATE_TEST_SUITE_P(Ways, WayInTest, ::testing::Values(WayIn::kShim, WayIn::kNri),
                         [](const ::testing::TestParamInfo<WayIn>& info) { return testing::wayName(info.param); });

}  // namespace
}  // namespace vri
