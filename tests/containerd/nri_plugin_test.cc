// vri-nri-plugin on a real containerd 2.x's NRI socket (label `containerd2`; start it with
// tests/containerd/containerd-fixture.sh up 2, 2.0 or 2.4, whose NRI socket is inside the fixture:
// CTest runs it on each, the release the other tests use and the oldest and newest 2.x lines), with a real
// vrid on this machine's CPUs and a private kubepods. A pod made before the plugin ran is adopted
// with the CPUs it holds; containerd and vrid restarted in turn change nothing; what containerd
// removes is released.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "kubelet-bridge/cri_client.h"
#include "proto/vri.grpc.pb.h"
#include "tests/containerd/containerd_under_test.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using cri_client::CriClient;
using cri_client::PodQos;
using ::testing::HasSubstr;
using ::testing::Not;
namespace cri = ::runtime::v1;

const testing::ContainerdUnderTest kUnderTest = testing::containerdUnderTest();
const std::string kNriSocket = kUnderTest.nriSocket();

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class NriPluginContainerdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the containerd tests run as root";
    ASSERT_TRUE(kUnderTest.atLeast2()) << "NRI is containerd 2's: run with VRI_CONTAINERD=2, 2.0 or 2.4";
    ASSERT_TRUE(std::filesystem::exists(kUnderTest.socket()))
        << "containerd is not running at " << kUnderTest.socket() << ": " << kUnderTest.fixtureHint();
    ASSERT_TRUE(std::filesystem::exists(kNriSocket)) << "containerd 2 has no NRI socket at " << kNriSocket;
    vrid_ = std::make_unique<testing::VridProcess>(
        tmp_, "vrid",
        std::vector<std::string>{"--topology=live", "--kubelet-cgroup-root=/" + root_, "--reconcile-interval=0"});
    ASSERT_TRUE(vrid_->start());
    vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->socket(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (!kUnderTest.atLeast2() || !vrid_) return;
    CriClient direct(kUnderTest.socket());
    cri::ListPodSandboxResponse sandboxes;
    if (direct.listPodSandboxes(&sandboxes).ok()) {
      for (const cri::PodSandbox& s : sandboxes.items()) {
        if (!s.metadata().uid().starts_with(uidPrefix())) continue;
        EXPECT_TRUE(direct.stopPodSandbox(s.id()).ok());
        EXPECT_TRUE(direct.removePodSandbox(s.id()).ok());
      }
    }
    stopPlugin();
    if (vrid_) vrid_->stop();
    for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
      testing::removeCgroupTree(hierarchy.path().string() + "/" + root_);
  }
  void startPlugin(const std::string& name = "vri-test") {
    plugin_ = testing::spawn({VRI_NRI_PLUGIN_BINARY, "--nri-socket=" + kNriSocket, "--vrid=" + vrid_->adminSocket(),
                              "--index=90", "--name=" + name},
                             tmp_.sub("plugin.log"), O_APPEND, true);
  }
  void stopPlugin() {
    if (plugin_ <= 0) return;
    ::kill(plugin_, SIGTERM);
    ::waitpid(plugin_, nullptr, 0);
    plugin_ = -1;
  }
  std::string pluginLog() const { return testing::readFile(tmp_.sub("plugin.log")); }
  // Starts the plugin and waits for its registration with containerd.
  bool startRegisteredPlugin(const std::string& name = "vri-test") {
    startPlugin(name);
    return pluginLogShows("registered with the runtime's NRI");
  }
  // A pod made through containerd directly, as kubelet makes one, in this test's kubepods.
  cri::PodSandboxConfig runPodOn(CriClient& cri, int n, PodQos qos, std::string* sandbox,
                                 const std::map<std::string, std::string>& annotations = {}) {
    const std::string uid = uidPrefix() + std::to_string(n);
    cri::PodSandboxConfig pod = cri_client::sandboxConfig(
        uid, "pod" + std::to_string(n), cri_client::podCgroupParent("/" + root_ + "/kubepods", qos, uid));
    for (const auto& [key, value] : annotations) (*pod.mutable_annotations())[key] = value;
    const grpc::Status run = cri.runPodSandbox(pod, sandbox);
    EXPECT_TRUE(run.ok()) << run.error_message() << pluginLog();
    return pod;
  }
  static std::string cpusetOf(const std::string& parent, const std::string& id) {
    return testing::trimmed(testing::readFile("/sys/fs/cgroup/cpuset" + parent + "/" + id + "/cpuset.cpus"));
  }
  // The plugin logs a release once vrid has answered, so after vrid's ledger shows it: awaited.
  bool pluginLogShows(const std::string& line) const {
    return testing::eventually([&] { return pluginLog().find(line) != std::string::npos; });
  }
  std::string uidPrefix() const { return "vri-nri-test-" + std::to_string(::getpid()) + "-"; }
  v1::PodInfo podInfo(const std::string& podUid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_pod_uid(podUid);
    v1::Tenant tenant;
    return vri_->GetTenant(&context, request, &tenant).ok() ? tenant.pod() : v1::PodInfo();
  }

  testing::TempDir tmp_;
  const std::string root_ = "vri-nri-" + std::to_string(::getpid());
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_;
  pid_t plugin_ = -1;
};

TEST_F(NriPluginContainerdTest, AdoptsWhatRanBeforeItSurvivesRestartsAndReleasesWhatContainerdRemoves) {
  // A Burstable pod made straight on containerd, before the plugin runs.
  CriClient direct(kUnderTest.socket());
  const std::string uid = uidPrefix() + "1";
  const cri::PodSandboxConfig pod = cri_client::sandboxConfig(
      uid, "pod1", cri_client::podCgroupParent("/" + root_ + "/kubepods", PodQos::kBurstable, uid));
  std::string sandbox, container;
  ASSERT_TRUE(direct.runPodSandbox(pod, &sandbox).ok());
  cri::LinuxContainerResources resources = cri_client::kubeletResources(250, 0, 64 << 20);
  resources.set_cpuset_cpus("0-1");
  ASSERT_TRUE(
      direct.createContainer(sandbox, pod, cri_client::containerConfig(pod, "app", resources), &container).ok());
  ASSERT_TRUE(direct.startContainer(container).ok());

  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  EXPECT_THAT(pluginLog(), HasSubstr("as 90-vri-test"));
  EXPECT_THAT(pluginLog(), HasSubstr("configured by containerd v" + kUnderTest.flavour));
  EXPECT_THAT(pluginLog(), HasSubstr("(events 0x68d)"));
  // Synchronize adopts it with the CPUs it holds.
  ASSERT_TRUE(testing::eventually([&] { return podInfo(uid).containers_size() == 1; })) << pluginLog() << vrid_->log();
  const v1::PodInfo adopted = podInfo(uid);
  EXPECT_EQ(adopted.sandbox_id(), sandbox);
  EXPECT_EQ(adopted.containers(0).resources().id(), container);
  EXPECT_EQ(adopted.containers(0).cpuset_cpus(), "0-1") << adopted.DebugString();

  // containerd restarts: the plugin registers again, and nothing changes.
  std::string output;
  ASSERT_EQ(
      testing::runCommand({VRI_SOURCE_DIR "/tests/containerd/containerd-fixture.sh", "restart", kUnderTest.flavour},
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
  // container. The pod's may not: containerd 2.2 keeps no NRI state for a pod across its restart,
  // and relays no RemovePodSandbox for one it has none for. Whatever the release, the pod is
  // released, by its removal or else at the next synchronization; the log says which.
  ASSERT_TRUE(direct.stopPodSandbox(sandbox).ok());
  ASSERT_TRUE(direct.removePodSandbox(sandbox).ok());
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid).containers_size() == 0; })) << pluginLog();
  EXPECT_TRUE(pluginLogShows("container pod1/app removed by the runtime; released")) << pluginLog();
  // NRI v0.12 (containerd 2.3 on) calls RemoveContainer and warns of a plugin that needs StateChange.
  EXPECT_THAT(testing::readFile(kUnderTest.root + "/containerd.log"),
              Not(HasSubstr("plugin 90-vri-test uses deprecated StateChange")));
  if (testing::eventually([&] { return podInfo(uid).uid().empty(); }, std::chrono::seconds(3))) {
    EXPECT_TRUE(pluginLogShows("pod default/pod1 removed by the runtime; released")) << pluginLog();
    std::cout << "containerd " << kUnderTest.flavour << " relayed the pod's removal" << std::endl;
    return;
  }
  std::cout << "containerd " << kUnderTest.flavour << " relayed no removal for the pod; released at the next "
            << "synchronization" << std::endl;
  ASSERT_EQ(
      testing::runCommand({VRI_SOURCE_DIR "/tests/containerd/containerd-fixture.sh", "restart", kUnderTest.flavour},
                          &output, tmp_.sub("restart.out")),
      0)
      << output;
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid).uid().empty(); }, std::chrono::seconds(30)))
      << pluginLog() << vrid_->log();
  EXPECT_TRUE(pluginLogShows("its sandbox is gone from the runtime; released")) << pluginLog();
}

// kubelet talks to containerd directly; the plugin places what containerd creates, as the shim
// does: a Guaranteed container on an exclusive CPU, a Burstable one on the shared pool, and one
// that does not fit refused with vrid's reason, leaving nothing behind.
// A value of the container's OCI spec, linux.resources.cpu.<field>, from containerd's verbose status.
std::string specCpu(CriClient& cri, const std::string& id, const std::string& field) {
  cri::ContainerStatusResponse status;
  if (!cri.status(id, &status, true).ok() || !status.info().contains("info")) return "<no verbose status>";
  google::protobuf::Struct info;
  if (!google::protobuf::util::JsonStringToMessage(status.info().at("info"), &info).ok()) return "<not JSON>";
  const google::protobuf::Value* at = nullptr;
  const google::protobuf::Struct* in = &info;
  for (const std::string key : {"runtimeSpec", "linux", "resources", "cpu", field.c_str()}) {
    const auto found = in->fields().find(key);
    if (found == in->fields().end()) return "<no " + key + ">";
    at = &found->second;
    in = &at->struct_value();
  }
  if (at->has_number_value()) return std::to_string(static_cast<int64_t>(at->number_value()));
  return at->string_value();
}

TEST_F(NriPluginContainerdTest, PlacesWhatContainerdCreatesAndRefusesWhatDoesNotFit) {
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  CriClient direct(kUnderTest.socket());
  const auto runPod = [&](int n, PodQos qos, std::string* sandbox) { return runPodOn(direct, n, qos, sandbox); };

  std::string sandbox1, app;
  const cri::PodSandboxConfig guaranteed = runPod(1, PodQos::kGuaranteed, &sandbox1);
  EXPECT_EQ(podInfo(uidPrefix() + "1").sandbox_id(), sandbox1);  // admitted with its sandbox by RunPodSandbox
  grpc::Status created = direct.createContainer(
      sandbox1, guaranteed,
      cri_client::containerConfig(guaranteed, "app", cri_client::kubeletResources(1000, 1000, 64 << 20)), &app);
  ASSERT_TRUE(created.ok()) << created.error_message() << pluginLog();
  ASSERT_TRUE(direct.startContainer(app).ok());
  const v1::PodInfo placed = podInfo(uidPrefix() + "1");
  ASSERT_EQ(placed.containers_size(), 1) << placed.DebugString();
  EXPECT_EQ(placed.containers(0).resources().id(), app);
  const std::string cpu = placed.containers(0).exclusive_cpus();
  ASSERT_EQ(cpu.size(), 1u) << "one exclusive CPU, got '" << cpu << "'" << pluginLog();
  const std::string shared = cpu == "0" ? "1" : "0";
  // The kernel and containerd's OCI spec agree with vrid: containerd took the plugin's adjustment.
  // (CRI's ContainerStatus still reports the resources kubelet asked for, without the adjustment's
  // CPUs: containerd keeps NRI's adjustments out of it.)
  EXPECT_EQ(cpusetOf(guaranteed.linux().cgroup_parent(), app), cpu);
  EXPECT_EQ(specCpu(direct, app, "cpus"), cpu);
  EXPECT_EQ(specCpu(direct, app, "quota"), "100000");

  std::string sandbox2, web;
  const cri::PodSandboxConfig burstable = runPod(2, PodQos::kBurstable, &sandbox2);
  created = direct.createContainer(
      sandbox2, burstable,
      cri_client::containerConfig(burstable, "web", cri_client::kubeletResources(250, 500, 64 << 20)), &web);
  ASSERT_TRUE(created.ok()) << created.error_message() << pluginLog();
  ASSERT_TRUE(direct.startContainer(web).ok());
  EXPECT_EQ(cpusetOf(burstable.linux().cgroup_parent(), web), shared);
  EXPECT_EQ(specCpu(direct, web, "cpus"), shared);
  EXPECT_EQ(specCpu(direct, web, "shares"), "256");

  // A second exclusive CPU is not there (one is reserved, one taken): containerd fails the
  // creation with vrid's reason, and neither containerd nor vrid keeps anything of it.
  std::string sandbox3, big;
  const cri::PodSandboxConfig second = runPod(3, PodQos::kGuaranteed, &sandbox3);
  created = direct.createContainer(
      sandbox3, second, cri_client::containerConfig(second, "big", cri_client::kubeletResources(1000, 1000, 64 << 20)),
      &big);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.error_message(), HasSubstr("vri: ")) << created.error_message();
  cri::ListContainersResponse containers;
  ASSERT_TRUE(direct.listContainers(uidPrefix() + "3", &containers).ok());
  for (const cri::Container& c : containers.containers()) EXPECT_NE(c.pod_sandbox_id(), sandbox3) << c.id();
  EXPECT_EQ(podInfo(uidPrefix() + "3").containers_size(), 0);
  EXPECT_EQ(podInfo(uidPrefix() + "1").containers(0).exclusive_cpus(), cpu);
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
  // In containerd's records at once: the creation's answer carried the update.
  EXPECT_EQ(specCpu(direct, web, "cpus"), shared);
  EXPECT_THAT(pluginLog(), HasSubstr("1 shared containers narrowed"));

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
  EXPECT_THAT(output, HasSubstr("vri-cri-shim: vri-nri-plugin (pid " + std::to_string(plugin_) +
                                ") already places this node's pods for vrid at " + vrid_->adminSocket()));
  EXPECT_THAT(output, HasSubstr("run vri-cri-shim or vri-nri-plugin, not both"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.sub("cri.sock")));  // it served nothing
  EXPECT_EQ(::kill(plugin_, 0), 0);                             // and the plugin runs on
}

// The package's containerd drop-in makes the plugin required: while it is away, containerd 2.2 and
// later refuse every container but those of pods that tolerate its absence; once it is back,
// containers are created and placed. containerd 2.0 has no validator: there a container is
// created without VRI's allocation, as the README says.
TEST_F(NriPluginContainerdTest, WithVriRequiredNoContainerIsCreatedWhileThePluginIsAway) {
  const std::string dropIn = kUnderTest.root + "/conf.d/vri-required.toml";
  std::filesystem::create_directories(kUnderTest.root + "/conf.d");
  std::filesystem::create_symlink(VRI_SOURCE_DIR "/deploy/containerd-vri-required.toml", dropIn);
  std::string output;
  const auto restartContainerd = [&] {
    return testing::runCommand(
        {VRI_SOURCE_DIR "/tests/containerd/containerd-fixture.sh", "restart", kUnderTest.flavour}, &output,
        tmp_.sub("restart.out"));
  };
  ASSERT_EQ(restartContainerd(), 0) << output;
  struct Unrequire {
    std::string dropIn;
    std::function<int()> restart;
    ~Unrequire() {
      std::filesystem::remove(dropIn);
      restart();
    }
  } unrequire{dropIn, restartContainerd};

  CriClient direct(kUnderTest.socket());
  const auto podWith = [&](int n, const std::map<std::string, std::string>& annotations, std::string* sandbox) {
    return runPodOn(direct, n, PodQos::kBurstable, sandbox, annotations);
  };

  const auto create = [&](const std::string& sandbox, const cri::PodSandboxConfig& pod, std::string* id) {
    return direct.createContainer(
        sandbox, pod, cri_client::containerConfig(pod, "app", cri_client::kubeletResources(250, 0, 64 << 20)), id);
  };

  std::string sandbox1, c1;
  const cri::PodSandboxConfig plain = podWith(1, {}, &sandbox1);
  const grpc::Status away = create(sandbox1, plain, &c1);
  if (kUnderTest.flavour == "2.0") {
    EXPECT_TRUE(away.ok()) << away.error_message();
    std::cout << "containerd 2.0 has no NRI validator: created without VRI while the plugin is away" << std::endl;
  } else {
    ASSERT_FALSE(away.ok());
    EXPECT_THAT(away.error_message(), HasSubstr("required plugin \"vri\" not present")) << away.error_message();
  }

  std::string sandbox2, c2;
  const cri::PodSandboxConfig tolerant = podWith(2, {{"tolerate-missing-plugins.vri.dev/pod", "true"}}, &sandbox2);
  const grpc::Status tolerated = create(sandbox2, tolerant, &c2);
  EXPECT_TRUE(tolerated.ok()) << tolerated.error_message();

  // The name the drop-in requires.
  ASSERT_TRUE(startRegisteredPlugin("vri")) << pluginLog();
  std::string sandbox3, c3;
  const cri::PodSandboxConfig later = podWith(3, {}, &sandbox3);
  const grpc::Status back = create(sandbox3, later, &c3);
  ASSERT_TRUE(back.ok()) << back.error_message() << pluginLog();
  EXPECT_EQ(podInfo(uidPrefix() + "3").containers_size(), 1) << pluginLog();
}

// Without the validator (containerd 2.0, or VRI not required), a container created while the plugin
// is away runs on every CPU, another tenant's exclusive one included. Measured: from the plugin
// starting again to that container's cgroup holding only the shared pool.
TEST_F(NriPluginContainerdTest, AContainerCreatedWhileThePluginWasAwayLeavesExclusiveCpusWhenItIsBack) {
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  CriClient direct(kUnderTest.socket());
  const auto runPod = [&](int n, PodQos qos, std::string* sandbox) { return runPodOn(direct, n, qos, sandbox); };
  const auto run = [&](const std::string& sandbox, const cri::PodSandboxConfig& pod,
                       const cri::LinuxContainerResources& resources, std::string* id) {
    EXPECT_TRUE(direct.createContainer(sandbox, pod, cri_client::containerConfig(pod, "app", resources), id).ok());
    EXPECT_TRUE(direct.startContainer(*id).ok());
  };
  std::string sandbox1, exclusive;
  const cri::PodSandboxConfig guaranteed = runPod(1, PodQos::kGuaranteed, &sandbox1);
  run(sandbox1, guaranteed, cri_client::kubeletResources(1000, 1000, 64 << 20), &exclusive);
  const std::string cpu = podInfo(uidPrefix() + "1").containers(0).exclusive_cpus();
  ASSERT_EQ(cpu.size(), 1u) << pluginLog();
  const std::string shared = cpu == "0" ? "1" : "0";

  stopPlugin();
  std::string sandbox2, intruder;
  const cri::PodSandboxConfig burstable = runPod(2, PodQos::kBurstable, &sandbox2);
  run(sandbox2, burstable, cri_client::kubeletResources(250, 0, 64 << 20), &intruder);
  const std::string unplaced = cpusetOf(burstable.linux().cgroup_parent(), intruder);
  EXPECT_NE(unplaced, shared) << "created without the plugin, yet on the shared pool";

  const auto back = std::chrono::steady_clock::now();
  startPlugin();
  ASSERT_TRUE(testing::eventually([&] { return cpusetOf(burstable.linux().cgroup_parent(), intruder) == shared; },
                                  std::chrono::seconds(10)))
      << cpusetOf(burstable.linux().cgroup_parent(), intruder) << pluginLog();
  const auto window =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - back).count();
  std::cout << "containerd " << kUnderTest.flavour << ": a container created while the plugin was away ran on CPUs "
            << unplaced << " (CPU " << cpu << " exclusive to another pod) until " << window
            << " ms after the plugin started again (polled every 20 ms)" << std::endl;
  // containerd's records follow: the container's spec holds the shared pool too.
  EXPECT_TRUE(testing::eventually([&] { return specCpu(direct, intruder, "cpus") == shared; }))
      << specCpu(direct, intruder, "cpus") << pluginLog();
}

// An init container that completed gives its exclusive CPU to the pod's next container, by the
// shim's rule, from the exit code NRI reports with StopContainer: containerd 2.4 fills it in.
// containerd 2.0 (NRI v0.8.0 has no such field) and 2.2 (it leaves it unset) report none: the exit
// cannot be told from a crash, the CPU stays the init container's, and the next one is refused on
// this 2-CPU machine. A resize goes through vrid.
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
  if (kUnderTest.flavour != "2.4") {
    ASSERT_FALSE(created.ok());
    EXPECT_THAT(created.error_message(), HasSubstr("vri: ")) << created.error_message();
    std::cout << "containerd " << kUnderTest.flavour << ": no exit code through NRI; the init container keeps CPU "
              << cpu << std::endl;
    return;
  }
  ASSERT_TRUE(created.ok()) << created.error_message() << pluginLog();
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
