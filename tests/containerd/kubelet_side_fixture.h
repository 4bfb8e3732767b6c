// The fixture of the kubelet side's tests on a real containerd (way_in_test.cc, cri_shim_test.cc,
// and the NRI plugin's own, nri_plugin_test.cc and nri_failure_policy_test.cc):
// a real vrid on this machine's CPUs with a private kubepods, a CRI client that calls as kubelet
// does, and VRI's placer of kubelet's pods for one way in:
//   shim  vri-cri-shim on a socket of the test's, in front of containerd; kubelet calls the shim
//   nri   vri-nri-plugin on containerd's NRI socket; kubelet calls containerd directly
// The placer is a process the test starts, stops and restarts.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/vri.grpc.pb.h"
#include "tests/containerd/containerd_records.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri::testing {

enum class WayIn { kShim, kNri };

inline std::string wayName(WayIn way) { return way == WayIn::kShim ? "Shim" : "Nri"; }

inline std::string procStatusField(int pid, const std::string& field) {
  const std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find(field + ":");
  if (at == std::string::npos) return "";
  const size_t start = status.find_first_not_of(" \t", at + field.size() + 1);
  return status.substr(start, status.find('\n', start) - start);
}

class KubeletSideTest : public ::testing::Test {
 public:
  static constexpr int64_t kMemory = 64LL << 20;
  struct Pod {
    cri::PodSandboxConfig config;
    std::string sandbox;
  };

 protected:
  // The way in this test runs: the shim, unless a parameterised test says otherwise.
  virtual WayIn way() const { return WayIn::kShim; }
  // Whether SetUp starts the placer (the NRI plugin's own tests start and stop it themselves).
  virtual bool placerAtSetUp() const { return true; }

  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the containerd tests run as root";
    ASSERT_TRUE(std::filesystem::exists(kUnderTest.socket()))
        << "containerd is not running at " << kUnderTest.socket() << ": " << kUnderTest.fixtureHint();
    ASSERT_GE(std::thread::hardware_concurrency(), 2u) << "these tests need 2 CPUs";
    if (way() == WayIn::kNri) {
      ASSERT_TRUE(kUnderTest.atLeast2()) << "NRI is containerd 2's: run the /Nri tests with VRI_CONTAINERD=2 or 2.4";
      ASSERT_TRUE(std::filesystem::exists(kNriSocket)) << "containerd has no NRI socket at " << kNriSocket;
    }
    vrid_ = std::make_unique<VridProcess>(
        tmp_, "vrid",
        std::vector<std::string>{"--topology=live", "--kubelet-cgroup-root=/" + root_, "--reconcile-interval=0"});
    ASSERT_TRUE(vrid_->start());
    cri_.emplace(way() == WayIn::kShim ? tmp_.sub("cri.sock") : kUnderTest.socket());
    if (placerAtSetUp()) startPlacer();
    vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->socket(), grpc::InsecureChannelCredentials()));
    admin_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    removePodsOf(uidPrefix());
    stopPlacer();
    if (vrid_) vrid_->stop();
    removeCgroupsUnder(root_);
  }

  // Starts the placer and waits until it serves: the shim's socket, the plugin's registration.
  void startPlacer() {
    if (way() == WayIn::kShim) {
      placer_ = spawn({VRI_CRI_SHIM_BINARY, "--listen=" + tmp_.sub("cri.sock"), "--containerd=" + kUnderTest.socket(),
                       "--vrid=" + vrid_->adminSocket(), "--vrid-timeout-ms=1000"},
                      placerLogPath(), O_APPEND, true);
      ASSERT_TRUE(eventually([&] { return std::filesystem::exists(tmp_.sub("cri.sock")); })) << placerLog();
      return;
    }
    const size_t registered = registrations();
    spawnPlugin("vri-test");
    ASSERT_TRUE(awaitRegistrationAfter(registered)) << placerLog();
  }
  // The NRI plugin as a process on containerd's NRI socket, registered as `name`; not waited for.
  void spawnPlugin(const std::string& name) {
    placer_ = spawn({VRI_NRI_PLUGIN_BINARY, "--nri-socket=" + kNriSocket, "--vrid=" + vrid_->adminSocket(),
                     "--index=90", "--name=" + name, "--cri-socket=" + kUnderTest.socket()},
                    placerLogPath(), O_APPEND, true);
  }
  void stopPlacer() {
    if (placer_ <= 0) return;
    ::kill(placer_, SIGTERM);
    ::waitpid(placer_, nullptr, 0);
    placer_ = -1;
  }
  // The plugin's registrations with containerd so far (it registers again after containerd restarts).
  size_t registrations() const { return count(placerLog(), "registered with the runtime's NRI"); }
  bool awaitRegistrationAfter(size_t before) const {
    return eventually([&] { return registrations() > before; }, std::chrono::seconds(30));
  }
  std::string placerLogPath() const { return tmp_.sub(way() == WayIn::kShim ? "shim.log" : "plugin.log"); }
  std::string placerLog() const { return readFile(placerLogPath()); }

  std::string uidPrefix() const { return "vri-cri-test-" + std::to_string(::getpid()) + "-"; }
  std::string uid(int n) const { return uidPrefix() + std::to_string(n); }
  std::string kubepods() const { return "/" + root_ + "/kubepods"; }
  std::string kubeletRoot() const { return "/" + root_; }  // kubelet's --cgroup-root
  std::string cpusetOf(const std::string& parent, const std::string& id) const {
    return trimmed(readFile("/sys/fs/cgroup/cpuset" + parent + "/" + id + "/cpuset.cpus"));
  }

  Pod runPod(int n, cri_client::PodQos qos, uint32_t attempt = 0) {
    Pod pod{cri_client::sandboxConfig(uid(n), "pod" + std::to_string(n),
                                      cri_client::podCgroupParent(kubeletRoot(), qos, uid(n)), attempt),
            ""};
    const grpc::Status run = cri_->runPodSandbox(pod.config, &pod.sandbox);
    EXPECT_TRUE(run.ok()) << run.error_message() << placerLog();
    return pod;
  }
  // Creates and starts; returns the id.
  std::string runContainer(const Pod& pod, const std::string& name, const cri::LinuxContainerResources& resources,
                           std::vector<std::string> args = {}, uint32_t attempt = 0) {
    std::string id;
    const grpc::Status created = cri_->createContainer(
        pod.sandbox, pod.config, cri_client::containerConfig(pod.config, name, resources, args, attempt), &id);
    EXPECT_TRUE(created.ok()) << created.error_message() << placerLog();
    if (!created.ok()) return "";
    const grpc::Status started = cri_->startContainer(id);
    EXPECT_TRUE(started.ok()) << started.error_message();
    return id;
  }
  v1::PodInfo podInfo(const std::string& podUid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_pod_uid(podUid);
    v1::Tenant tenant;
    const grpc::Status status = vri_->GetTenant(&context, request, &tenant);
    return status.ok() ? tenant.pod() : v1::PodInfo();
  }
  // A dedicated one-vCPU VM admitted through vrid's API: it takes the one CPU not reserved.
  grpc::Status admitVm(const std::string& uuid) {
    grpc::ClientContext context;
    v1::AdmitVmRequest vm;
    vm.set_uuid(uuid);
    vm.set_name("vm-" + uuid.substr(0, 4));
    vm.set_vcpus(1);
    vm.set_cpu_policy(v1::DEDICATED);
    vm.set_memory_bytes(64 << 20);
    v1::VmAllocation allocation;
    return admin_->AdmitVm(&context, vm, &allocation);
  }
  grpc::Status releaseVm(const std::string& uuid) {
    grpc::ClientContext context;
    v1::ReleaseVmRequest release;
    release.set_uuid(uuid);
    v1::Released released;
    return admin_->ReleaseVm(&context, release, &released);
  }
  // A container's CPU values as containerd records them ("cpus", "quota", "shares"): through the
  // shim, the resources CRI reports (the shim asks containerd for vrid's values); through NRI, the
  // container's OCI spec (containerd keeps NRI's adjustments out of CRI's report).
  std::string recorded(const std::string& id, const std::string& field) {
    if (way() == WayIn::kNri) return specCpu(*cri_, id, field);
    cri::ContainerStatusResponse status;
    const grpc::Status asked = cri_->status(id, &status);
    if (!asked.ok()) return "<error: " + asked.error_message() + ">";
    const cri::LinuxContainerResources& r = status.status().resources().linux();
    if (field == "cpus") return r.cpuset_cpus();
    if (field == "quota") return std::to_string(r.cpu_quota());
    return std::to_string(r.cpu_shares());
  }
  std::string exclusiveOf(const std::string& podUid, const std::string& container) {
    const v1::PodInfo info = podInfo(podUid);
    for (const v1::ContainerInfo& c : info.containers()) {
      if (c.resources().name() == container) return c.exclusive_cpus();
    }
    return "<none>";
  }

  TempDir tmp_;
  const std::string root_ = "vri-cri-" + std::to_string(::getpid());
  std::unique_ptr<VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_, admin_;
  pid_t placer_ = -1;
  std::optional<CriClient> cri_;  // kubelet's: the shim's socket or containerd's
};

// The NRI plugin's own tests (nri_plugin_test.cc, nri_failure_policy_test.cc): the plugin started
// and stopped by each test, pods made through containerd directly as kubelet makes them.
class NriPluginContainerdTest : public KubeletSideTest {
 protected:
  WayIn way() const override { return WayIn::kNri; }
  bool placerAtSetUp() const override { return false; }

  void startPlugin(const std::string& name = "vri-test") { spawnPlugin(name); }
  void stopPlugin() { stopPlacer(); }
  std::string pluginLog() const { return placerLog(); }
  // Starts the plugin and waits for its registration with containerd.
  bool startRegisteredPlugin(const std::string& name = "vri-test") {
    startPlugin(name);
    return pluginLogShows("registered with the runtime's NRI");
  }
  // The plugin logs a release once vrid has answered, so after vrid's ledger shows it: awaited.
  bool pluginLogShows(const std::string& line) const {
    return eventually([&] { return pluginLog().find(line) != std::string::npos; });
  }
  // A pod made through `cri` in this test's kubepods.
  cri::PodSandboxConfig runPodOn(CriClient& cri, int n, PodQos qos, std::string* sandbox,
                                 const std::map<std::string, std::string>& annotations = {}) {
    cri::PodSandboxConfig pod = cri_client::sandboxConfig(uid(n), "pod" + std::to_string(n),
                                                          cri_client::podCgroupParent(kubeletRoot(), qos, uid(n)));
    for (const auto& [key, value] : annotations) (*pod.mutable_annotations())[key] = value;
    const grpc::Status run = cri.runPodSandbox(pod, sandbox);
    EXPECT_TRUE(run.ok()) << run.error_message() << pluginLog();
    return pod;
  }
  pid_t pluginPid() const { return placer_; }
};

// The same, once per way in the containerd under test has.
class WayInTest : public KubeletSideTest, public ::testing::WithParamInterface<WayIn> {
 protected:
  WayIn way() const override { return GetParam(); }
};

}  // namespace vri::testing
