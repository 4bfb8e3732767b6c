// The NRI plugin's failure policy on a real containerd 2.x (label `containerd2`, as
// nri_plugin_test.cc): the plugin away with VRI required and without, and a vrid that does not
// answer. NRI gives each request of the runtime's 2 s; a plugin that misses it is disconnected and
// containerd creates containers without it, so the plugin answers within half of that, refusing
// what vrid could not place in time.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

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

// The package's containerd drop-in that makes the plugin required, in force while this lives:
// containerd restarted with it, and again without it at the end.
class VriRequired {
 public:
  explicit VriRequired(std::string scratch) : scratch_(std::move(scratch)) {
    std::filesystem::create_directories(kUnderTest.root + "/conf.d");
    std::filesystem::create_symlink(std::string(VRI_SOURCE_DIR) + "/deploy/containerd-vri-required.toml", dropIn_);
    inForce_ = restartContainerd() == 0;
  }
  ~VriRequired() {
    std::filesystem::remove(dropIn_);
    restartContainerd();
  }
  VriRequired(const VriRequired&) = delete;
  VriRequired& operator=(const VriRequired&) = delete;
  bool inForce() const { return inForce_; }
  const std::string& output() const { return output_; }

 private:
  int restartContainerd() {
    return testing::runCommand(
        {std::string(VRI_SOURCE_DIR) + "/tests/containerd/containerd-fixture.sh", "restart", kUnderTest.flavour},
        &output_, scratch_);
  }
  const std::string dropIn_ = kUnderTest.root + "/conf.d/vri-required.toml";
  std::string scratch_, output_;
  bool inForce_ = false;
};

// The package's containerd drop-in makes the plugin required: while it is away, containerd 2.2 and
// later refuse every container but those of pods that tolerate its absence; once it is back,
// containers are created and placed. containerd 2.0 has no validator: there a container is
// created without VRI's allocation, as docs/operating.md says.
TEST_F(NriPluginContainerdTest, WithVriRequiredNoContainerIsCreatedWhileThePluginIsAway) {
  VriRequired required(tmp_.sub("restart.out"));
  ASSERT_TRUE(required.inForce()) << required.output();

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

// vrid stopped in its tracks (SIGSTOP: its socket still accepts, nothing answers): what needs vrid is
// refused within the plugin's budget, half of NRI's 2-s timeout, with vrid's missed deadline as the
// reason, and the plugin stays registered, so nothing is created without it. On containerd 2.2 and
// later that is the pod itself. containerd 2.0 and 2.1 leave a failed sandbox's pause process
// running, so there the sandbox goes ahead and its container is what is refused. vrid resumed, the
// pod's container is created and placed.
TEST_F(NriPluginContainerdTest, AVridThatDoesNotAnswerGetsThePodRefusedInTimeAndThePluginStaysRegistered) {
  const std::string containerdLog = kUnderTest.root + "/containerd.log";
  const size_t logged = testing::readFile(containerdLog).size();  // this test's lines follow
  ASSERT_TRUE(startRegisteredPlugin()) << pluginLog();
  CriClient direct(kUnderTest.socket());
  const std::string uid = uidPrefix() + "1";
  const cri::PodSandboxConfig pod =
      cri_client::sandboxConfig(uid, "pod1", cri_client::podCgroupParent("/" + root_, PodQos::kBurstable, uid));
  const cri::ContainerConfig app =
      cri_client::containerConfig(pod, "app", cri_client::kubeletResources(250, 0, 64 << 20));
  ASSERT_EQ(::kill(vrid_->pid(), SIGSTOP), 0);
  struct Resume {
    pid_t pid;
    ~Resume() { ::kill(pid, SIGCONT); }
  } resume{vrid_->pid()};
  const bool sandboxGoesAhead = kUnderTest.flavour == "2.0";
  std::string sandbox, container;
  auto asked = std::chrono::steady_clock::now();
  grpc::Status stalled = direct.runPodSandbox(pod, &sandbox);
  if (sandboxGoesAhead) {
    ASSERT_TRUE(stalled.ok()) << stalled.error_message() << pluginLog();
    EXPECT_TRUE(pluginLogShows("the sandbox goes ahead")) << pluginLog();
    asked = std::chrono::steady_clock::now();
    stalled = direct.createContainer(sandbox, pod, app, &container);
  }
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked).count();
  ASSERT_FALSE(stalled.ok());
  EXPECT_THAT(stalled.error_message(), HasSubstr("vri: ")) << stalled.error_message();
  std::cout << "containerd " << kUnderTest.flavour << ": " << (sandboxGoesAhead ? "CreateContainer" : "RunPodSandbox")
            << " with vrid stopped refused after " << took << " ms: " << stalled.error_message() << std::endl;
  ::kill(vrid_->pid(), SIGCONT);
  // Resumed, vrid first works off what waited (the failed sandbox's release): the pod is asked for
  // once vrid answers again.
  ASSERT_TRUE(testing::eventually([&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::Node node;
    return vri_->GetNode(&context, v1::GetNodeRequest(), &node).ok();
  }));

  // The same connection places the pod once vrid answers: never disconnected for being late.
  if (!sandboxGoesAhead) {
    // containerd releases the failed sandbox's name once its cleanup's NRI calls return, which wait
    // on the plugin, which waited on vrid: until then the name is "reserved", and kubelet retries.
    // When that cleanup did not finish (the plugin's release of the pod waited on the stopped vrid),
    // containerd keeps the name for the failed sandbox until it is removed, which kubelet's garbage
    // collection does: after 10 s the test removes it as kubelet would, once.
    grpc::Status placed;
    const auto retried = std::chrono::steady_clock::now();
    bool collected = false;
    testing::eventually(
        [&] {
          placed = direct.runPodSandbox(pod, &sandbox);
          const std::string message = placed.error_message();
          const size_t reserved = message.find("is reserved for \"");
          if (!placed.ok() && reserved != std::string::npos && !collected &&
              std::chrono::steady_clock::now() - retried > std::chrono::seconds(10)) {
            const std::string holder = message.substr(reserved + 17, 64);
            std::cout << "the name is still reserved for the failed sandbox " << holder
                      << " after 10 s; removing it as kubelet's garbage collection would" << std::endl;
            direct.stopPodSandbox(holder);
            direct.removePodSandbox(holder);
            collected = true;
          }
          return placed.ok() || reserved == std::string::npos;
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(placed.ok()) << placed.error_message() << pluginLog();
  }
  ASSERT_TRUE(direct.createContainer(sandbox, pod, app, &container).ok()) << pluginLog();
  EXPECT_TRUE(testing::eventually([&] {
    const v1::PodInfo info = podInfo(uid);
    return info.sandbox_id() == sandbox && info.containers_size() == 1 &&
           info.containers(0).resources().id() == container;
  })) << pluginLog();
  EXPECT_EQ(count(pluginLog(), "registered with the runtime's NRI"), 1u) << pluginLog();
  const std::string since = testing::readFile(containerdLog).substr(logged);
  EXPECT_EQ(since.find("closing plugin 90-vri-test"), std::string::npos) << "containerd dropped the plugin";
}

// A request waiting unread on one of `pid`'s sockets for a stopped vrid. ss names an accepted socket
// by its inode, which /proc/<pid>/fd links to. HTTP/2's own frames (a window update, a ping, a
// settings ack: 9 to 17 bytes each) can wait there too, left from the call before; an
// AdmitContainer carries a 64-character container ID and the pod's UID and cgroup parent, so only
// this many bytes or more count as the request. Returns its unread bytes, 0 while none waits.
constexpr long kSmallestAdmitContainer = 128;
long requestWaitsAt(pid_t pid, const std::string& scratch) {
  std::set<std::string> inodes;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(fd.path(), error).string();
    if (target.starts_with("socket:[")) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::string table;
  if (testing::runCommand({"/usr/bin/ss", "-xnH"}, &table, scratch) != 0) return 0;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string netid, state, local, inode;
    long unread = 0, unsent = 0;
    fields >> netid >> state >> unread >> unsent >> local >> inode;
    if (unread >= kSmallestAdmitContainer && inodes.contains(inode)) return unread;
  }
  return 0;
}

// run(): the plugin SIGKILLed after vrid decided its CreateContainer and before containerd heard the
// answer (vrid stopped until the request waits in its socket, then the plugin stopped until vrid's
// ledger holds the container): containerd makes the container without VRI or fails the create, and
// the ledger holds a container nobody was told of. Once the plugin is back, its sync makes the
// ledger what containerd runs: a container containerd made is placed where the ledger holds it, one
// it does not have gives its CPU back and kubelet's retry is placed. No CPU is held twice.
class PluginKilledMidCreateTest : public NriPluginContainerdTest {
 protected:
  // `name`: the plugin's, as containerd's drop-in requires it.
  void run(const std::string& name = "vri-test") {
    ASSERT_TRUE(startRegisteredPlugin(name)) << pluginLog();
    CriClient direct(kUnderTest.socket());
    std::string sandbox;
    const cri::PodSandboxConfig pod = runPodOn(direct, 1, PodQos::kGuaranteed, &sandbox);
    const auto app = [&](uint32_t attempt) {
      return cri_client::containerConfig(pod, "app", cri_client::kubeletResources(1000, 1000, 64 << 20), {}, attempt);
    };

    struct Resume {
      pid_t pid;
      ~Resume() { ::kill(pid, SIGCONT); }
    } resume{vrid_->pid()};
    ASSERT_EQ(::kill(vrid_->pid(), SIGSTOP), 0);
    grpc::Status cut;
    std::string made;
    std::thread creating([&] { cut = direct.createContainer(sandbox, pod, app(0), &made); });
    long waiting = 0;
    const bool asked =
        testing::eventually([&] { return (waiting = requestWaitsAt(vrid_->pid(), tmp_.sub("ss.out"))) > 0; });
    ::kill(pluginPid(), SIGSTOP);
    ::kill(vrid_->pid(), SIGCONT);
    const bool decided = asked && testing::eventually([&] { return exclusiveOf(uid(1), "app").size() == 1; });
    const std::string held = exclusiveOf(uid(1), "app");
    ::kill(pluginPid(), SIGKILL);
    stopPlugin();  // reaps it
    creating.join();
    ASSERT_TRUE(asked) << "the plugin's AdmitContainer never reached vrid's socket" << pluginLog();
    ASSERT_TRUE(decided) << "vrid did not decide the plugin's AdmitContainer: " << held << pluginLog();
    std::cout << "containerd " << kUnderTest.flavour << ": the request waited in vrid's socket (" << waiting
              << " bytes); vrid gave CPU " << held << "; the plugin was killed before containerd heard, and the create "
              << (cut.ok() ? "made container " + made.substr(0, 13) + " without VRI" : "failed: " + cut.error_message())
              << std::endl;
    if (cut.ok()) {
      ASSERT_TRUE(direct.startContainer(made).ok());  // as kubelet goes on
    }

    ASSERT_TRUE(startRegisteredPlugin(name)) << pluginLog();
    // The ledger's containers for the pod are containerd's, each in a cgroup on the CPUs the ledger gives it.
    const auto agree = [&](std::string* why) {
      cri::ListContainersResponse listed;
      if (!direct.listContainers(uid(1), &listed).ok()) return (*why = "containerd did not list", false);
      std::set<std::string> running, ledger;
      for (const cri::Container& c : listed.containers()) running.insert(c.id());
      const v1::PodInfo info = podInfo(uid(1));
      for (const v1::ContainerInfo& c : info.containers()) {
        ledger.insert(c.resources().id());
        const std::string cpuset = cpusetOf(pod.linux().cgroup_parent(), c.resources().id());
        if (cpuset != c.exclusive_cpus())
          return (*why = c.resources().id() + " runs on " + cpuset + ", the ledger gives " + c.exclusive_cpus(), false);
      }
      *why = "containerd has " + std::to_string(running.size()) + ", the ledger " + std::to_string(ledger.size());
      return running == ledger;
    };
    std::string why;
    EXPECT_TRUE(testing::eventually([&] { return agree(&why); })) << why << pluginLog();

    if (!cut.ok()) {
      // kubelet's retry of the create: placed on an exclusive CPU of its own.
      std::string retried;
      ASSERT_TRUE(direct.createContainer(sandbox, pod, app(1), &retried).ok()) << pluginLog();
      ASSERT_TRUE(direct.startContainer(retried).ok());
      EXPECT_TRUE(agree(&why)) << why << pluginLog();
    }
    const std::string cpu = exclusiveOf(uid(1), "app");
    EXPECT_EQ(cpu.size(), 1u) << podInfo(uid(1)).DebugString();
    grpc::ClientContext context;
    v1::Node node;
    ASSERT_TRUE(vri_->GetNode(&context, v1::GetNodeRequest(), &node).ok());
    EXPECT_THAT(node.shared_cpuset(), Not(HasSubstr(cpu))) << "CPU " << cpu << " is exclusive and shared at once";
  }
};

TEST_F(PluginKilledMidCreateTest, ContainerdGoesOnWithoutThePluginAndTheSyncPlacesWhatItMade) { run(); }

// VRI required does not cover it: containerd's validator counts the plugin present once the request
// reached it, so a plugin that dies inside the request leaves the container made without VRI's
// adjustments (measured on 2.0, 2.2 and 2.4) until the plugin is back and its sync places it.
TEST_F(PluginKilledMidCreateTest, WithVriRequiredContainerdStillGoesOnAndTheSyncPlacesWhatItMade) {
  VriRequired required(tmp_.sub("restart.out"));
  ASSERT_TRUE(required.inForce()) << required.output();
  run("vri");
}

}  // namespace
}  // namespace vri
