#include "kubelet-bridge/nri-plugin/nri_plugin.h"

#include <utility>
#include <vector>

#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"
#include "kubelet-bridge/nri-plugin/nri_snapshot_runtime.h"
#include "kubelet-bridge/program_log.h"

namespace vri {

namespace api = ::nri::pkg::api::v1alpha1;

namespace {

// The shared-pool updates waiting for an answer (NRI before v0.12.1: NriRuntimeUpdates), added to
// this one's update list, but for `skip`, whose own values the answer carries.
template <typename Response>
void withPendingUpdates(NriRuntimeUpdates& runtime, Response& response, const std::string& skip) {
  for (api::ContainerUpdate& update : runtime.takePending(skip)) *response.add_update() = std::move(update);
}

nri::PluginSessionOptions sessionOptions(const NriPluginOptions& options) {
  return nri::PluginSessionOptions{
      .socket = options.socket,
      .name = options.name,
      .index = options.index,
      .program = "vri-nri-plugin",
      .placer = "vrid",
      .registrationTimeout = options.registrationTimeout,
      .answerTimeout = options.vridTimeout,
      .reconnectPause = options.reconnectPause,
      .log = options.log,
  };
}

}  // namespace

std::vector<api::Event> NriPlugin::eventsHandled() {
  return {api::RUN_POD_SANDBOX, api::STOP_POD_SANDBOX, api::REMOVE_POD_SANDBOX, api::CREATE_CONTAINER,
          api::START_CONTAINER, api::UPDATE_CONTAINER, api::STOP_CONTAINER,     api::REMOVE_CONTAINER};
}

NriPlugin::NriPlugin(VridClient& vrid, NriPluginOptions options)
    : vrid_(vrid),
      options_(std::move(options)),
      session_(*this, sessionOptions(options_)),
      runtimeUpdates_([this](const api::ContainerUpdate& update) {
        // Gone, or the runtime could not apply it: tried again until vrid no longer holds it shared.
        return session_.updateContainer(update);
      }),
      placement_(vrid_, runtimeUpdates_, options_.cri, options_.log),
      follower_(vrid_, runtimeUpdates_, SharedPoolFollowerOptions{.log = options_.log}),
      vridConnection_(vrid_, runtimeUpdates_, follower_,
                      VridConnectionOptions{.log = options_.log, .checkLedger = false}) {
  if (options_.cri != nullptr) {
    sweeper_ = std::make_unique<NriSandboxSweeper>(vrid_, *options_.cri, options_.sweepInterval, options_.log,
                                                   options_.releaser);
  }
}

void NriPlugin::configured(const nri::ConfiguringRuntime& runtime) {
  deferredSync_.reset();  // the session's Synchronize judges the ledger afresh
  placement_.setRuntimeStopsFailedSandboxes(runtime.stopsFailedSandboxes);
  runtimeUpdates_.setUnsolicitedAllowed(runtime.takesUnsolicitedUpdates);
  if (!runtime.takesUnsolicitedUpdates) {
    options_.log("shared-pool updates ride on its next answer (NRI before v0.12.1)");
  }
}

api::SynchronizeResponse NriPlugin::synchronize(const std::vector<api::PodSandbox>& pods,
                                                const std::vector<api::Container>& containers) {
  api::SynchronizeResponse response;
  const auto start = std::chrono::steady_clock::now();
  placement_.synchronized(pods, containers);
  if (syncWithVrid(pods, containers)) {
    for (api::ContainerUpdate& update : placement_.updatesAfterSynchronize())
      *response.add_update() = std::move(update);
  }
  withPendingUpdates(runtimeUpdates_, response, "");
  // NRI's request timeout (2 s) bounds the whole synchronization: its last part's time, for bench/.
  options_.log("synchronized " + std::to_string(pods.size()) + " pods, " + std::to_string(containers.size()) +
               " containers in " + millis(std::chrono::steady_clock::now() - start) + " (" +
               std::to_string(response.update_size()) + " updates)");
  if (sweeper_) {
    std::vector<std::string> sandboxes;
    for (const api::PodSandbox& pod : pods) sandboxes.push_back(pod.id());
    sweeper_->watch(sandboxes);
  }
  // The shared pool is followed from the first synchronization on, once what the runtime holds is
  // recorded: a follower that started before would not know it, and would send every shared
  // container's values again at each start of the plugin.
  std::call_once(following_, [this] { vridConnection_.start(); });
  // What ran on its CPUs keeps them; what vrid placed anew is updated in the runtime's records.
  return response;
}

bool NriPlugin::syncWithVrid(const std::vector<api::PodSandbox>& pods, const std::vector<api::Container>& containers) {
  options_.log("synchronizing with the runtime: " + std::to_string(pods.size()) + " pods, " +
               std::to_string(containers.size()) + " containers");
  // vrid's pods first: every id vrid binds was made in the runtime first, so the report has it.
  auto tenants = vrid_.listPods(placement_.vridScope());
  if (!tenants.ok()) {
    // The runtime waits for this answer; the ledger is judged again at the next connection.
    options_.log("vrid's pods are not available (" + tenants.error().message() +
                 "); the ledger is not checked against the runtime this time");
    return false;
  }
  auto report = std::make_unique<NriSnapshotRuntime>(pods, containers);
  auto sync =
      LedgerSync::plan(LedgerSyncCalls{vrid_, *report, options_.vridTimeout, options_.log}, std::move(*tenants));
  if (!sync) return true;
  // The sync takes until three quarters of the answer's time: the runtime's records (one more
  // list of vrid's pods) and the answer take the rest. What is left is carried on after the answer.
  const auto now = std::chrono::system_clock::now();
  const auto until = now + (placement_.answerBy() - now) * 3 / 4;
  if (!sync->carryOn(until)) {
    options_.log("the ledger sync goes on after Synchronize's answer: " + std::to_string(sync->remaining()) +
                 " releases and adoptions left, carried out between the runtime's requests");
    deferredSync_ = DeferredSync{std::move(report), std::move(sync)};
  }
  return true;
}

bool NriPlugin::idle() {
  if (!deferredSync_) return false;
  // Small steps: a request that arrives meanwhile waits for one step at most.
  constexpr auto kStep = std::chrono::milliseconds(20);
  if (!deferredSync_->sync->carryOn(std::chrono::system_clock::now() + kStep)) return true;
  deferredSync_.reset();
  options_.log("the ledger sync is done");
  // What was adopted late (vrid may have narrowed a container's cgroups) in the runtime's records,
  // as the pool follower sends its updates.
  placement_.answerBy(std::chrono::system_clock::now() + options_.vridTimeout);
  for (const api::ContainerUpdate& update : placement_.updatesAfterSynchronize()) {
    runtime::v1::UpdateContainerResourcesRequest request;
    request.set_container_id(update.container_id());
    *request.mutable_linux() = nri_terms::criResources(update.linux().resources());
    if (auto sent = runtimeUpdates_.updateContainerResources(CallScope::within(options_.vridTimeout), request);
        !sent.ok()) {
      options_.log("container " + update.container_id() +
                   ": its values not sent to the runtime: " + sent.error().message());
    }
  }
  return false;
}

void NriPlugin::adoptFirst(const std::string& sandboxId) {
  if (deferredSync_) deferredSync_->sync->adoptNow(sandboxId, placement_.answerBy());
}

void NriPlugin::forgetPending(const std::string& runtimeId) {
  if (deferredSync_) deferredSync_->sync->forget(runtimeId);
}

Result<void> NriPlugin::runPodSandbox(const api::PodSandbox& pod) {
  VRI_TRY(placement_.runPodSandbox(pod));
  return {};
}

void NriPlugin::stopPodSandbox(const api::PodSandbox& pod) {
  if (options_.releaser != nullptr) options_.releaser->sandboxStopped(pod.id());
}

void NriPlugin::removePodSandbox(const api::PodSandbox& pod) {
  if (options_.releaser != nullptr) options_.releaser->sandboxRemoved(pod.id());
  forgetPending(pod.id());
  if (sweeper_) sweeper_->removed(pod.id());
  placement_.podRemoved(pod);
}

Result<api::CreateContainerResponse> NriPlugin::createContainer(const api::CreateContainerRequest& request) {
  adoptFirst(request.pod().id());
  VRI_ASSIGN_OR_RETURN(auto created, placement_.createContainer(request));
  withPendingUpdates(runtimeUpdates_, created, request.container().id());
  return created;
}

Result<api::UpdateContainerResponse> NriPlugin::updateContainer(const api::UpdateContainerRequest& request) {
  adoptFirst(request.pod().id());
  VRI_ASSIGN_OR_RETURN(auto updated, placement_.updateContainer(request));
  withPendingUpdates(runtimeUpdates_, updated, request.container().id());  // its own values are the answer's
  return updated;
}

// The runtime makes a container's cgroup with its task, after CreateContainer's answer, so the
// admission's writes found none: vrid writes it here, before the process runs (with cpuset
// partitions, an exclusive container's partition forms here). Never refused: a vrid that cannot
// write it is logged, and reconcile repairs it.
void NriPlugin::startContainer(const api::PodSandbox& pod, const api::Container& container) {
  const auto start = std::chrono::steady_clock::now();
  auto written = vrid_.containerStarted(placement_.vridScope(), container.id());
  if (!written.ok()) {
    if (written.error().code() != ErrorCode::kNotFound)  // not one of vrid's: nothing to write
      options_.log("StartContainer " + pod.name() + "/" + container.name() + ": vrid did not write its cgroups (" +
                   written.error().message() + "); reconcile repairs them");
    return;
  }
  if (written->cgroup_writes() > 0)
    options_.log("StartContainer " + pod.name() + "/" + container.name() + ": plugin and vrid " +
                 millis(std::chrono::steady_clock::now() - start) + " (vrid's cgroup writes " +
                 millis(std::chrono::microseconds(written->cgroup_write_us())) + " for " +
                 std::to_string(written->cgroup_writes()) + " files)");
}

api::StopContainerResponse NriPlugin::stopContainer(const api::StopContainerRequest& request) {
  forgetPending(request.container().id());  // stopped: not adopted, if it waits
  placement_.containerStopped(request.pod(), request.container());
  api::StopContainerResponse stopped;
  withPendingUpdates(runtimeUpdates_, stopped, "");
  return stopped;
}

void NriPlugin::removeContainer(const api::PodSandbox& pod, const api::Container& container) {
  forgetPending(container.id());
  placement_.containerRemoved(pod, container);
}

}  // namespace vri
