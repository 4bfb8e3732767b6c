// The NRI plugin's test bed: vri-nri-plugin's sessions against a runtime peer on a real unix socket
// (the runtime's NRI side, tests/support/nri_runtime_peer.h) and vrid in memory (fake_vrid.h).
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kubelet-bridge/nri-plugin/nri_plugin.h"
#include "nri/runtime_versions.h"
#include "tests/support/fake_vrid.h"
#include "tests/support/nri_runtime_peer.h"
#include "tests/support/temp_dir.h"
#include "tools/cri-client/cri_client.h"

namespace vri::testing {

namespace api = ::nri::pkg::api::v1alpha1;

inline constexpr char kPlugin[] = "nri.pkg.api.v1alpha1.Plugin";
inline constexpr char kUid[] = "0b1c2d3e-0000-4000-8000-00000000000a";

class NriPluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = tmp_.sub("nri.sock");
    path.copy(address.sun_path, path.size());
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener_, 4), 0);
    NriPluginOptions options;
    options.socket = path;
    options.reconnectPause = std::chrono::milliseconds(50);
    options.releaser = releaser();
    options.log = [this](const std::string& line) {
      std::lock_guard lock(logMutex_);
      log_ += line + "\n";
    };
    plugin_ = std::make_unique<NriPlugin>(vrid_, options);
    sessions_ = std::thread([this] { plugin_->run(); });
  }
  void TearDown() override {
    plugin_->stop();
    ::shutdown(listener_, SHUT_RDWR);
    sessions_.join();
    ::close(listener_);
  }
  // What the plugin tells of the sandboxes the runtime stops and removes; none by default.
  virtual StoppedPodReleaser* releaser() { return nullptr; }
  std::unique_ptr<NriRuntimePeer> accept() {
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    return fd < 0 ? nullptr : std::make_unique<NriRuntimePeer>(fd);
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }
  // The runtime's side of a registration: the plugin's RegisterPlugin, then Configure from `runtime`.
  uint32_t registration(NriRuntimePeer& runtime, api::ConfigureResponse& configured) {
    auto registered = runtime.next();
    EXPECT_TRUE(registered.has_value());
    if (!registered) return 0;
    ttrpc::Request request;
    EXPECT_TRUE(request.ParseFromString(registered->message.payload));
    EXPECT_EQ(request.method(), "RegisterPlugin");
    api::RegisterPluginRequest who;
    EXPECT_TRUE(who.ParseFromString(request.payload()));
    EXPECT_EQ(who.plugin_name(), "vri");
    EXPECT_EQ(who.plugin_idx(), "50");
    EXPECT_EQ(who.nri_version(), kNriApiVersion);
    api::ConfigureRequest configure;
    configure.set_runtime_name("containerd");
    configure.set_runtime_version("v2.2.9");
    EXPECT_TRUE(runtime.request(1, kPlugin, "Configure", configure.SerializeAsString()));
    const auto answer = replyTo(runtime, 1);
    EXPECT_TRUE(configured.ParseFromString(answer.payload()));
    return registered->message.streamId;
  }
  // A registration with an empty Synchronize (stream 3), answered: the plugin is then in session.
  void registerWithNothingRunning(NriRuntimePeer& runtime) {
    api::ConfigureResponse configured;
    const uint32_t registering = registration(runtime, configured);
    ASSERT_TRUE(runtime.request(3, kPlugin, "Synchronize", api::SynchronizeRequest().SerializeAsString()));
    EXPECT_EQ(replyTo(runtime, 3).status().code(), 0);
    ASSERT_TRUE(runtime.respond(registering, api::Empty().SerializeAsString()));
  }
  ttrpc::Response replyTo(NriRuntimePeer& runtime, uint32_t stream) {
    auto got = runtime.next();
    // The shared-pool follower's UpdateContainers may come at any time once the plugin is
    // registered, as with a real runtime: answered (and kept) on the way.
    while (got && got->conn == nri::kRuntimeServiceConn) {
      ttrpc::Request call;
      EXPECT_TRUE(call.ParseFromString(got->message.payload));
      EXPECT_EQ(call.method(), "UpdateContainers");
      unsolicited_.push_back(call.payload());
      EXPECT_TRUE(runtime.respond(got->message.streamId, api::UpdateContainersResponse().SerializeAsString()));
      got = runtime.next();
    }
    ttrpc::Response response;
    EXPECT_TRUE(got.has_value());
    if (!got) return response;
    EXPECT_EQ(got->conn, nri::kPluginServiceConn);
    EXPECT_EQ(got->message.streamId, stream);
    EXPECT_TRUE(response.ParseFromString(got->message.payload));
    return response;
  }

  TempDir tmp_;
  FakeVrid vrid_;
  int listener_ = -1;
  std::mutex logMutex_;
  std::string log_;
  std::unique_ptr<NriPlugin> plugin_;
  std::thread sessions_;
  std::vector<std::string> unsolicited_;  // UpdateContainers' requests answered by replyTo
};

inline api::PodSandbox nriPod(const std::string& id, const std::string& uid) {
  api::PodSandbox pod;
  pod.set_id(id);
  pod.set_uid(uid);
  pod.set_name("p-" + uid.substr(uid.size() - 2));
  pod.set_namespace_("default");
  (*pod.mutable_labels())["io.kubernetes.pod.uid"] = uid;
  pod.mutable_linux()->set_cgroup_parent(cri_client::podCgroupParent("/", cri_client::PodQos::kBurstable, uid));
  return pod;
}

}  // namespace vri::testing
