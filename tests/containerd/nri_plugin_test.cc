// vri-nri-plugin on a real containerd 2.x's NRI socket (label `containerd2`; start it with
// tests/containerd/containerd-fixture.sh up 2, 2.0 or 2.4, whose NRI socket is inside the fixture:
// CTest runs it on each, the release the other tests use and the oldest and newest 2.x lines), with a real
// vrid on this machine's CPUs and a private kubepods. A pod made before the plugin ran is adopted
// with the CPUs it holds; containerd and vrid restarted in turn change nothing; what containerd
// removes is released.
#include <filesystem>
#include <iostream>
#include <string>

#include "tests/containerd/kubelet_side_fixture.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using testing::count;
using testing::CriClient;
using ::testing::HasSubstr;
using testing::kUnderTest;
using ::testing::Not;
using testing::NriPluginContainerdTest;
using testing::PodQos;
using testing::specCpu;
namespace cri = ::runtime::v1;

TEST_F(NriPluginContainerdTest, AdoptsWhatRanBeforeItSurvivesRestartsAndReleasesWhatContainerdRemoves) {
  // A Burstable pod made straight on containerd, before the plugin runs.
  CriClient direct(kUnderTest.socket());
  const std::string uid = uidPrefix() + "1";
  const cri::PodSandboxConfig pod =
      cri_client::sandboxConfig(uid, "pod1", cri_client::podCgroupParent("/" + root_, PodQos::kBurstable, uid));
  std::string sandbox, container;
  ASSERT_TRUE(direct.runPodSandbox(pod, &sandbox).ok());
  cri::LinuxContainerResources resources = cri_client::kubeletResources(250, 0, 64 << 20);
  resources.set_cpuset_cpus("0-1");
  ASSERT_TRUE(
      direct.createContainer(sandbox, pod, cri_client::containerConfig(pod, "app", resources), &container).ok());
  ASSERT_TRUE(direct.startContainer(container).ok());

  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  EXPECT_THAT(pluginLog(), HasSubstr("as 90-vri-test"));
  // The runtime's Configure call comes after the registration: its line may follow a moment later.
  EXPECT_TRUE(pluginLogShows("configured by containerd v" + kUnderTest.flavour)) << pluginLog();
  EXPECT_THAT(pluginLog(), HasSubstr("(events 0x6af)"));
  // Synchronize adopts it with the CPUs it holds.
  ASSERT_TRUE(testing::eventually([&] { return podInfo(uid).containers_size() == 1; })) << pluginLog() << vrid_->log();
  const v1::PodInfo adopted = podInfo(uid);
  EXPECT_EQ(adopted.sandbox_id(), sandbox);
  EXPECT_EQ(adopted.containers(0).resources().id(), container);
  EXPECT_EQ(adopted.containers(0).cpuset_cpus(), "0-1") << adopted.DebugString();

  // containerd restarts: the plugin registers again, and nothing changes.
  std::string output;
  ASSERT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + "/tests/containerd/containerd-fixture.sh", "restart",
                                 kUnderTest.flavour},
                                &output, tmp_.sub("restart.out")),
            0)
      << output;
  ASSERT_TRUE(testing::eventually([&] { return count(pluginLog(), "registered with the runtime's NRI") == 2; },
                                  std::chrono::seconds(30)))
      << pluginLog();
  ASSERT_TRUE(testing::eventually([&] { return count(pluginLog(), "synchronizing with the runtime") == 2; }))
      << pluginLog();
  EXPECT_EQ(podInfo(uid).SerializeAsString(), adopted.SerializeAsString());

  // vrid restarts: the plugin keeps its connection to containerd, and vrid its ledger.
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid).containers_size() == 1; })) << vrid_->log();
  EXPECT_EQ(podInfo(uid).containers(0).cpuset_cpus(), "0-1");
  EXPECT_EQ(count(pluginLog(), "registered with the runtime's NRI"), 2u) << pluginLog();

  // containerd removes the pod. Its container's removal reaches the plugin and vrid lets go of the
  // container. The pod's may not: containerd keeps no NRI state for a pod across its restart, and
  // relays no RemovePodSandbox for one it has none for. Either way the pod is released within a
  // few seconds: by its removal, or by the plugin's sweep of the runtime's CRI list (every 2 s);
  // the log says which.
  ASSERT_TRUE(direct.stopPodSandbox(sandbox).ok());
  ASSERT_TRUE(direct.removePodSandbox(sandbox).ok());
  const auto removed = std::chrono::steady_clock::now();
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid).containers_size() == 0; })) << pluginLog();
  EXPECT_TRUE(pluginLogShows("container pod1/app removed by the runtime; released")) << pluginLog();
  // NRI v0.12 (containerd 2.3 on) calls RemoveContainer and warns of a plugin that needs StateChange.
  EXPECT_THAT(testing::readFile(kUnderTest.root + "/containerd.log"),
              Not(HasSubstr("plugin 90-vri-test uses deprecated StateChange")));
  ASSERT_TRUE(testing::eventually([&] { return podInfo(uid).uid().empty(); }, std::chrono::seconds(10))) << pluginLog();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - removed).count();
  const bool relayed = pluginLog().find("pod default/pod1 removed by the runtime; released") != std::string::npos;
  if (!relayed) {
    EXPECT_TRUE(pluginLogShows("is gone from the runtime, which relayed no removal for it; its pod released"))
        << pluginLog();
  }
  std::cout << "containerd " << kUnderTest.flavour << ": the pod released " << took << " ms after its removal, "
            << (relayed ? "which containerd relayed" : "found by the plugin's sweep (containerd relayed no removal)")
            << std::endl;
}

// The shared pool shrinks and grows: a Guaranteed container created through NRI narrows the
// running Burstable one in the same answer (containerd's records never lag the kernel's), and its
// removal widens it again through NRI's unsolicited UpdateContainers, sent by the shared-pool
// follower as the shim sends UpdateContainerResources.
TEST_F(NriPluginContainerdTest, RunningSharedContainersFollowTheSharedPoolInContainerdsRecords) {
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  CriClient direct(kUnderTest.socket());
  const auto runPod = [&](int n, PodQos qos, std::string* sandbox) { return runPodOn(direct, n, qos, sandbox); };
  std::string sandbox1, web;
  const cri::PodSandboxConfig burstable = runPod(1, PodQos::kBurstable, &sandbox1);
  ASSERT_TRUE(direct
                  .createContainer(
                      sandbox1, burstable,
                      cri_client::containerConfig(burstable, "web", cri_client::kubeletResources(250, 500, 64 << 20)),
                      &web)
                  .ok());
  ASSERT_TRUE(direct.startContainer(web).ok());
  EXPECT_EQ(specCpu(direct, web, "cpus"), "0-1");

  std::string sandbox2, app;
  const cri::PodSandboxConfig guaranteed = runPod(2, PodQos::kGuaranteed, &sandbox2);
  ASSERT_TRUE(
      direct
          .createContainer(
              sandbox2, guaranteed,
              cri_client::containerConfig(guaranteed, "app", cri_client::kubeletResources(1000, 1000, 64 << 20)), &app)
          .ok())
      << pluginLog();
  const std::string cpu = podInfo(uidPrefix() + "2").containers(0).exclusive_cpus();
  ASSERT_EQ(cpu.size(), 1u) << pluginLog();
  const std::string shared = cpu == "0" ? "1" : "0";
  // In containerd's records at once: the creation's answer carried the update. It was put there
  // by the creation itself, or, when vrid's pool event reached the follower first, by the follower
  // (riding on this answer before NRI v0.12.1); either way the plugin says so.
  EXPECT_EQ(specCpu(direct, web, "cpus"), shared);
  const std::string log = pluginLog();
  EXPECT_TRUE(log.find("1 shared containers narrowed") != std::string::npos ||
              log.find("now on CPUs " + shared + " in the runtime too") != std::string::npos)
      << log;

  // The Guaranteed container goes: the pool widens, and the follower tells containerd, with an
  // unsolicited UpdateContainers where containerd's NRI takes one safely (v0.12.1 on: 2.4), or else
  // in the plugin's next answer to containerd (an unsolicited one can deadlock containerd 2.0-2.3,
  // containerd#13733): here the next container's creation.
  ASSERT_TRUE(direct.stopPodSandbox(sandbox2).ok());
  ASSERT_TRUE(direct.removePodSandbox(sandbox2).ok());
  if (kUnderTest.flavour == "2.4") {
    EXPECT_TRUE(testing::eventually([&] { return specCpu(direct, web, "cpus") == "0-1"; }, std::chrono::seconds(10)))
        << specCpu(direct, web, "cpus") << pluginLog();
  } else {
    EXPECT_THAT(pluginLog(), HasSubstr("shared-pool updates ride on its next answer (NRI before v0.12.1)"));
  }
  EXPECT_TRUE(pluginLogShows("now on CPUs 0-1 in the runtime too")) << pluginLog();
  std::string sandbox3, next;
  const cri::PodSandboxConfig another = runPod(3, PodQos::kBurstable, &sandbox3);
  ASSERT_TRUE(direct
                  .createContainer(
                      sandbox3, another,
                      cri_client::containerConfig(another, "next", cri_client::kubeletResources(250, 500, 64 << 20)),
                      &next)
                  .ok());
  EXPECT_EQ(specCpu(direct, web, "cpus"), "0-1") << pluginLog();
}

// The shim and the plugin are both placers of kubelet's pods: a shim started for the plugin's vrid
// stops at once, saying why, and leaves the plugin placing.
TEST_F(NriPluginContainerdTest, AShimBesideThePluginIsRefusedWithAClearMessage) {
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  std::string output;
  const int exit = testing::runCommand({VRI_CRI_SHIM_BINARY, "--listen=" + tmp_.sub("cri.sock"),
                                        "--containerd=" + kUnderTest.socket(), "--vrid=" + vrid_->adminSocket()},
                                       &output, tmp_.sub("shim.out"));
  EXPECT_EQ(exit, 1) << output;
  EXPECT_THAT(output, HasSubstr("vri-cri-shim: vri-nri-plugin (pid " + std::to_string(pluginPid()) +
                                ") already places this node's pods for vrid at " + vrid_->adminSocket()));
  EXPECT_THAT(output, HasSubstr("run vri-cri-shim or vri-nri-plugin, not both"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.sub("cri.sock")));  // it served nothing
  EXPECT_EQ(::kill(pluginPid(), 0), 0);                         // and the plugin runs on
}

// An init container that completed gives its exclusive CPU to the pod's next container, by the
// shim's rule, from its exit code: NRI reports it with StopContainer from containerd 2.4 on;
// containerd 2.0 (NRI v0.8.0 has no such field) and 2.2 (it leaves it unset) report none, and the
// plugin asks containerd's CRI (--cri-socket) when the next container is created. A resize goes
// through vrid.
TEST_F(NriPluginContainerdTest, AnInitContainersExclusiveCpuGoesToTheNextContainerAndAResizeGoesThroughVrid) {
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  CriClient direct(kUnderTest.socket());
  std::string sandbox, init, app;
  const cri::PodSandboxConfig pod = runPodOn(direct, 1, PodQos::kGuaranteed, &sandbox);
  ASSERT_TRUE(direct
                  .createContainer(sandbox, pod,
                                   cri_client::containerConfig(
                                       pod, "setup", cri_client::kubeletResources(1000, 1000, 64 << 20), {"exit", "0"}),
                                   &init)
                  .ok())
      << pluginLog();
  ASSERT_TRUE(direct.startContainer(init).ok());
  ASSERT_TRUE(direct.waitFor(init, cri::CONTAINER_EXITED));
  const std::string cpu = podInfo(uidPrefix() + "1").containers(0).exclusive_cpus();
  ASSERT_EQ(cpu.size(), 1u) << pluginLog();
  // containerd relays the exit as StopContainer, on its own time; only an exit code makes it finished.
  if (kUnderTest.flavour == "2.4") {
    ASSERT_TRUE(pluginLogShows("container pod1/setup stopped (exit code 0)")) << pluginLog();
  }
  const grpc::Status created = direct.createContainer(
      sandbox, pod, cri_client::containerConfig(pod, "app", cri_client::kubeletResources(1000, 1000, 64 << 20)), &app);
  ASSERT_TRUE(created.ok()) << created.error_message() << pluginLog();
  const bool fromCri = pluginLog().find("exited with code 0, from the runtime's CRI") != std::string::npos;
  EXPECT_EQ(fromCri, kUnderTest.flavour != "2.4") << pluginLog();
  std::cout << "containerd " << kUnderTest.flavour << ": the init container's exit code from "
            << (fromCri ? "containerd's CRI" : "NRI's StopContainer") << std::endl;
  ASSERT_TRUE(direct.startContainer(app).ok());
  const v1::PodInfo info = podInfo(uidPrefix() + "1");
  std::string appCpus;
  for (const v1::ContainerInfo& c : info.containers()) {
    if (c.resources().name() == "app") appCpus = c.exclusive_cpus();
    if (c.resources().name() == "setup") {
      EXPECT_EQ(c.exclusive_cpus(), "") << info.DebugString();
    }
  }
  EXPECT_EQ(appCpus, cpu) << info.DebugString();
  EXPECT_EQ(specCpu(direct, app, "cpus"), cpu);

  // kubelet resizes it in place: through the plugin's UpdateContainer, vrid's values.
  ASSERT_TRUE(direct.updateResources(app, cri_client::kubeletResources(1000, 1000, 128 << 20)).ok()) << pluginLog();
  EXPECT_TRUE(pluginLogShows("UpdateContainer pod1/app: CPUs " + cpu)) << pluginLog();
}

}  // namespace
}  // namespace vri
