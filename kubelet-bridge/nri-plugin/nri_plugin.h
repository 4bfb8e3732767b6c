// NriPlugin: VRI as an NRI plugin of the container runtime (containerd 2.x), on the runtime's NRI
// socket. NRI's side of it, the session (connect, register, Configure, Synchronize in parts, the
// requests as messages), is nri/plugin_session.h; this is its handler, VRI's placement:
// Synchronize judges vrid's ledger against what the runtime reports with the kubelet side's one
// ledger sync (ledger_sync.h): what vrid holds that the runtime no longer has is released, running
// pods and containers vrid does not know are adopted on the CPUs they hold. Then it releases each
// pod and container the runtime removes, by its id. vrid is reached through `vrid`, whose channel
// reconnects by itself.
//
// Each pod and container event is placed by NriPlacement (nri_placement.h), on the same core as
// the CRI shim; the shared pool is followed as the shim follows it (shared_pool_follower.h), its
// updates sent as NRI's unsolicited UpdateContainers (nri_runtime_updates.h).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_annotations.h"
#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/nri-plugin/nri_placement.h"
#include "kubelet-bridge/nri-plugin/nri_runtime_updates.h"
#include "kubelet-bridge/nri-plugin/nri_sandbox_sweeper.h"
#include "kubelet-bridge/nri-plugin/nri_snapshot_runtime.h"
#include "kubelet-bridge/shared_pool_follower.h"
#include "kubelet-bridge/stopped_pod_releaser.h"
#include "kubelet-bridge/vrid_client.h"
#include "kubelet-bridge/vrid_connection.h"
#include "nri/nri_api.pb.h"
#include "nri/plugin_session.h"

namespace vri {

struct NriPluginOptions {
  std::string socket = "/var/run/nri/nri.sock";  // the runtime's NRI socket
  std::string name = "vri";
  std::string index = "50";  // NRI calls plugins in ascending index order
  std::chrono::milliseconds registrationTimeout{5000};
  // The most a request of the runtime's waits for vrid (all its vrid calls together); never more
  // than half the time the runtime gives the request (NRI's default: 2 s), so that the answer,
  // a refusal included, is in before the runtime disconnects the plugin for being late.
  std::chrono::milliseconds vridTimeout{1000};
  std::chrono::milliseconds reconnectPause{1000};  // between sessions
  // The runtime's CRI endpoint (containerd's socket), asked for the exit codes its NRI does not
  // report (containerd before 2.4); none: a completed init container keeps its exclusive CPUs there.
  RuntimeClient* cri = nullptr;
  // With `cri`: how often the sandboxes whose removal the runtime may not relay are looked for.
  std::chrono::milliseconds sweepInterval{2000};
  // Told of each sandbox the runtime stops and removes, to release a pod once kubelet is done with
  // it (stopped_pod_releaser.h); none: a pod is released when its sandbox is removed.
  StoppedPodReleaser* releaser = nullptr;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class NriPlugin : private nri::PluginHandler {
 public:
  NriPlugin(VridClient& vrid, NriPluginOptions options);

  // The events it handles.
  static std::vector<::nri::pkg::api::v1alpha1::Event> eventsHandled();

  // One session, until the runtime closes the connection or stop(); why it ended, or the error
  // that kept it from starting (no socket, registration refused).
  Result<void> runOnce() { return session_.runOnce(); }
  // Sessions one after another until stop().
  void run() { session_.run(); }
  // From any thread: the session ends and run() returns.
  void stop() { session_.stop(); }

  // What the runtime said of itself in its last Configure ("containerd v2.2.9"); empty before.
  std::string runtime() const { return session_.runtime(); }

 private:
  // nri::PluginHandler, on the session's serving thread.
  std::vector<::nri::pkg::api::v1alpha1::Event> events() const override { return eventsHandled(); }
  void configured(const nri::ConfiguringRuntime& runtime) override;
  ::nri::pkg::api::v1alpha1::SynchronizeResponse synchronize(
      const std::vector<::nri::pkg::api::v1alpha1::PodSandbox>& pods,
      const std::vector<::nri::pkg::api::v1alpha1::Container>& containers) override;
  Result<void> runPodSandbox(const ::nri::pkg::api::v1alpha1::PodSandbox& pod) override;
  void stopPodSandbox(const ::nri::pkg::api::v1alpha1::PodSandbox& pod) override;
  void removePodSandbox(const ::nri::pkg::api::v1alpha1::PodSandbox& pod) override;
  Result<::nri::pkg::api::v1alpha1::CreateContainerResponse> createContainer(
      const ::nri::pkg::api::v1alpha1::CreateContainerRequest& request) override;
  Result<::nri::pkg::api::v1alpha1::UpdateContainerResponse> updateContainer(
      const ::nri::pkg::api::v1alpha1::UpdateContainerRequest& request) override;
  void startContainer(const ::nri::pkg::api::v1alpha1::PodSandbox& pod,
                      const ::nri::pkg::api::v1alpha1::Container& container) override;
  ::nri::pkg::api::v1alpha1::StopContainerResponse stopContainer(
      const ::nri::pkg::api::v1alpha1::StopContainerRequest& request) override;
  void removeContainer(const ::nri::pkg::api::v1alpha1::PodSandbox& pod,
                       const ::nri::pkg::api::v1alpha1::Container& container) override;
  void answerBy(std::chrono::system_clock::time_point deadline) override { placement_.answerBy(deadline); }
  // One step of the ledger sync that did not fit in Synchronize's answer, between the runtime's
  // requests; true while more remains.
  bool idle() override;
  void sessionEnded() override { deferredSync_.reset(); }

  // The pods and containers of the last Synchronize.
  bool syncWithVrid(
      const std::vector<::nri::pkg::api::v1alpha1::PodSandbox>& pods,
      const std::vector<::nri::pkg::api::v1alpha1::Container>& containers);  // false when vrid could not be asked
  // A request names this sandbox: its adoption, if it waits, first.
  void adoptFirst(const std::string& sandboxId);
  // The runtime removed it: its adoption, if it waits, is dropped.
  void forgetPending(const std::string& runtimeId);

  VridClient& vrid_;
  const NriPluginOptions options_;
  nri::PluginSession session_;
  NriRuntimeUpdates runtimeUpdates_;
  NriPlacement placement_;  // on the serving thread only
  // The shared pool followed from vrid's events (from the first Synchronize on), as the shim follows it.
  SharedPoolFollower follower_;
  VridConnection vridConnection_;
  std::unique_ptr<NriSandboxSweeper> sweeper_;  // with the runtime's CRI only
  std::once_flag following_;
  // The ledger sync's work that Synchronize's answer could not wait for, and the report it reads
  // (on the serving thread; dropped with its session, and by a Configure).
  struct DeferredSync {
    std::unique_ptr<NriSnapshotRuntime> report;
    std::unique_ptr<LedgerSync> sync;
  };
  std::optional<DeferredSync> deferredSync_;
};

}  // namespace vri
