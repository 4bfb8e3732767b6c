// PluginSession: NRI's plugin side, as NRI's Go pkg/stub is to Go plugins. It connects to the
// runtime's NRI socket, registers with a name and an index, answers Configure with the event mask
// of what its handler handles (within what the runtime's NRI knows: runtime_versions.h), gathers
// Synchronize's parts, and hands each request to the handler as parsed messages, with the time its
// answer must be in by; the handler's answers go back as the runtime's replies. run() starts a new
// session whenever one ends, so a restarted runtime is met again.
//
// What a plugin does is its handler's (PluginHandler below): nothing here knows what a container is
// placed on. Every call on the handler comes from the session's serving thread, one at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/thread_annotations.h"
#include "nri/nri_api.pb.h"
#include "nri/ttrpc_connection.h"

namespace vri::nri {

namespace api = ::nri::pkg::api::v1alpha1;

// The runtime that configured the session, as its Configure said.
struct ConfiguringRuntime {
  std::string name;        // "containerd"
  std::string version;     // "v2.2.9"
  std::string nriVersion;  // "v0.12.3"; empty before NRI v0.12
  // Whether it takes unsolicited UpdateContainers safely (runtime_versions.h).
  bool takesUnsolicitedUpdates = false;
  // Whether it stops a sandbox whose RunPodSandbox a plugin failed (runtime_versions.h).
  bool stopsFailedSandboxes = true;
};

class PluginHandler {
 public:
  virtual ~PluginHandler() = default;

  // The events it handles: the mask Configure answers with.
  virtual std::vector<api::Event> events() const = 0;
  // Configure was accepted; Synchronize comes next (each session configures afresh).
  virtual void configured(const ConfiguringRuntime& runtime) = 0;
  // Synchronize, all its parts together: the updates to answer it with.
  virtual api::SynchronizeResponse synchronize(const std::vector<api::PodSandbox>& pods,
                                               const std::vector<api::Container>& containers) = 0;

  virtual Result<void> runPodSandbox(const api::PodSandbox& pod) = 0;
  virtual void stopPodSandbox(const api::PodSandbox& pod) = 0;
  virtual void removePodSandbox(const api::PodSandbox& pod) = 0;
  virtual Result<api::CreateContainerResponse> createContainer(const api::CreateContainerRequest& request) = 0;
  virtual Result<api::UpdateContainerResponse> updateContainer(const api::UpdateContainerRequest& request) = 0;
  // The runtime made the container's task (its cgroup); its process has not run yet. Never fails the start.
  virtual void startContainer(const api::PodSandbox& pod, const api::Container& container) = 0;
  virtual api::StopContainerResponse stopContainer(const api::StopContainerRequest& request) = 0;
  virtual void removeContainer(const api::PodSandbox& pod, const api::Container& container) = 0;

  // Before each request: when its answer must be in by, everything the handler does for it included.
  virtual void answerBy(std::chrono::system_clock::time_point deadline) = 0;
  // Between requests, while no request waits: one short step of deferred work; true while more remains.
  virtual bool idle() { return false; }
  // The session ended: what it deferred is the next session's to judge afresh.
  virtual void sessionEnded() {}
};

struct PluginSessionOptions {
  std::string socket = "/var/run/nri/nri.sock";  // the runtime's NRI socket
  std::string name = "vri";
  std::string index = "50";                // NRI calls plugins in ascending index order
  std::string program = "vri-nri-plugin";  // the plugin as its refusals name it
  std::string placer = "vrid";             // who places, as the log names it when a late request skips it
  std::chrono::milliseconds registrationTimeout{5000};
  // The most a request's answer takes, the handler's work included; never more than half the time
  // the runtime gives the request (NRI's default: 2 s), so that the answer, a refusal included, is in
  // before the runtime disconnects the plugin for being late. Also the time an unsolicited update waits.
  std::chrono::milliseconds answerTimeout{1000};
  std::chrono::milliseconds reconnectPause{1000};  // between sessions
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class PluginSession {
 public:
  PluginSession(PluginHandler& handler, PluginSessionOptions options);

  // One session, until the runtime closes the connection or stop(); why it ended, or the error
  // that kept it from starting (no socket, registration refused).
  Result<void> runOnce();
  // Sessions one after another until stop().
  void run();
  // From any thread: the session ends and run() returns.
  void stop();

  // One unsolicited update to the runtime (NRI's UpdateContainers), on the current session:
  // UNAVAILABLE without one, or when the runtime did not apply it.
  Result<void> updateContainer(const api::ContainerUpdate& update);

  // What the runtime said of itself in its last Configure ("containerd v2.2.9"); empty before.
  std::string runtime() const;

  // The most Synchronize's parts may hold together.
  static constexpr size_t kMaxSynchronizeBytes = 64 << 20;

 private:
  Result<std::string> handle(const std::string& service, const std::string& method, const std::string& payload,
                             const TtrpcConnection::RequestTime& time);
  Result<std::string> configure(const std::string& payload);
  Result<std::string> synchronize(const std::string& payload);
  Result<std::string> stateChange(const std::string& payload);
  Result<std::string> event(const std::string& method, const std::string& payload);

  PluginHandler& handler_;
  const PluginSessionOptions options_;
  std::atomic<bool> stopping_{false};
  mutable Mutex mutex_;
  bool registered_ VRI_GUARDED_BY(mutex_) = false;
  std::shared_ptr<TtrpcConnection> connection_ VRI_GUARDED_BY(mutex_);
  std::string runtime_ VRI_GUARDED_BY(mutex_);
  // Synchronize's parts so far (the runtime sends them one after another, on the serving thread).
  std::vector<api::PodSandbox> syncPods_;
  std::vector<api::Container> syncContainers_;
  size_t syncBytes_ = 0;  // of the parts so far
};

}  // namespace vri::nri
