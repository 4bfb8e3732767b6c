// The fixture of the NRI plugin's tests on a real containerd 2.x (nri_plugin_test.cc,
// nri_failure_policy_test.cc): a real vrid on this machine's CPUs with a private kubepods, the
// plugin started and stopped as a process on the fixture's NRI socket, containerd reached directly
// as kubelet reaches it.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "proto/vri.grpc.pb.h"
#include "tests/containerd/containerd_records.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri::testing {

class NriPluginContainerdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the containerd tests run as root";
    ASSERT_TRUE(kUnderTest.atLeast2()) << "NRI is containerd 2's: run with VRI_CONTAINERD=2, 2.0 or 2.4";
    ASSERT_TRUE(std::filesystem::exists(kUnderTest.socket()))
        << "containerd is not running at " << kUnderTest.socket() << ": " << kUnderTest.fixtureHint();
    ASSERT_TRUE(std::filesystem::exists(kNriSocket)) << "containerd 2 has no NRI socket at " << kNriSocket;
    vrid_ = std::make_unique<VridProcess>(
        tmp_, "vrid",
        std::vector<std::string>{"--topology=live", "--kubelet-cgroup-root=/" + root_, "--reconcile-interval=0"});
    ASSERT_TRUE(vrid_->start());
    vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->socket(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (!kUnderTest.atLeast2() || !vrid_) return;
    removePodsOf(uidPrefix());
    stopPlugin();
    if (vrid_) vrid_->stop();
    removeCgroupsUnder(root_);
  }
  void startPlugin(const std::string& name = "vri-test") {
    plugin_ = spawn({VRI_NRI_PLUGIN_BINARY, "--nri-socket=" + kNriSocket, "--vrid=" + vrid_->adminSocket(),
                     "--index=90", "--name=" + name, "--cri-socket=" + kUnderTest.socket()},
                    tmp_.sub("plugin.log"), O_APPEND, true);
  }
  void stopPlugin() {
    if (plugin_ <= 0) return;
    ::kill(plugin_, SIGTERM);
    ::waitpid(plugin_, nullptr, 0);
    plugin_ = -1;
  }
  std::string pluginLog() const { return readFile(tmp_.sub("plugin.log")); }
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
    return trimmed(readFile("/sys/fs/cgroup/cpuset" + parent + "/" + id + "/cpuset.cpus"));
  }
  // The plugin logs a release once vrid has answered, so after vrid's ledger shows it: awaited.
  bool pluginLogShows(const std::string& line) const {
    return eventually([&] { return pluginLog().find(line) != std::string::npos; });
  }
  std::string uidPrefix() const { return "vri-nri-test-" + std::to_string(::getpid()) + "-"; }
  v1::PodInfo podInfo(const std::string& podUid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_pod_uid(podUid);
    v1::Tenant tenant;
    return vri_->GetTenant(&context, request, &tenant).ok() ? tenant.pod() : v1::PodInfo();
  }

  TempDir tmp_;
  const std::string root_ = "vri-nri-" + std::to_string(::getpid());
  std::unique_ptr<VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_;
  pid_t plugin_ = -1;
};

}  // namespace vri::testing
