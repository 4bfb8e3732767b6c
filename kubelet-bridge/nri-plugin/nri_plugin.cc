#include "kubelet-bridge/nri-plugin/nri_plugin.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"
#include "kubelet-bridge/nri-plugin/nri_snapshot_runtime.h"
#include "kubelet-bridge/program_log.h"

namespace vri {

namespace api = ::nri::pkg::api::v1alpha1;

namespace {

constexpr char kPluginService[] = "nri.pkg.api.v1alpha1.Plugin";
constexpr char kRuntimeService[] = "nri.pkg.api.v1alpha1.Runtime";

Result<int> connectTo(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return Error::invalidArgument("NRI socket path too long: " + path);
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::fromErrno(errno, "socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    ::close(fd);
    return Error(ErrorCode::kUnavailable, "connect to the runtime's NRI socket " + path + ": " + std::strerror(err),
                 err);
  }
  return fd;
}

template <typename Message>
Result<Message> parsed(const std::string& payload, const char* what) {
  Message message;
  if (!message.ParseFromString(payload)) return Error::invalidArgument(std::string(what) + " does not parse");
  return message;
}

// The shared-pool updates waiting for an answer (NRI before v0.12.1: NriRuntimeUpdates), added to
// this one's update list, but for `skip`, whose own values the answer carries.
template <typename Response>
void withPendingUpdates(NriRuntimeUpdates& runtime, Response& response, const std::string& skip) {
  for (api::ContainerUpdate& update : runtime.takePending(skip)) *response.add_update() = std::move(update);
}

// The runtime's requests that ask vrid to place something (a late one is refused, not placed).
bool placesSomething(const std::string& method) {
  return method == "RunPodSandbox" || method == "CreateContainer" || method == "UpdateContainer";
}

// A handler's answer as the ttRPC payload, or its error.
template <typename Message>
Result<std::string> answer(const Result<Message>& result) {
  if (!result.ok()) return result.error();
  return result->SerializeAsString();
}

}  // namespace

NriPlugin::NriPlugin(VridClient& vrid, NriPluginOptions options)
    : vrid_(vrid),
      options_(std::move(options)),
      runtimeUpdates_([this](const api::ContainerUpdate& update) { return sendUpdate(update); }),
      placement_(vrid_, runtimeUpdates_, options_.cri, options_.log),
      follower_(vrid_, runtimeUpdates_, SharedPoolFollowerOptions{.log = options_.log}),
      vridConnection_(vrid_, runtimeUpdates_, follower_,
                      VridConnectionOptions{.log = options_.log, .checkLedger = false}) {
  if (options_.cri != nullptr) {
    sweeper_ = std::make_unique<NriSandboxSweeper>(vrid_, *options_.cri, options_.sweepInterval, options_.log,
                                                   options_.releaser);
  }
}

Result<void> NriPlugin::sendUpdate(const api::ContainerUpdate& update) {
  std::shared_ptr<nri::TtrpcConnection> connection;
  {
    MutexLock lock(mutex_);
    if (registered_) connection = connection_;
  }
  if (!connection) return Error(ErrorCode::kUnavailable, "not registered with the runtime's NRI");
  api::UpdateContainersRequest request;
  *request.add_update() = update;
  VRI_ASSIGN_OR_RETURN(const std::string reply, connection->call(kRuntimeService, "UpdateContainers",
                                                                 request.SerializeAsString(), options_.vridTimeout));
  VRI_ASSIGN_OR_RETURN(const auto answer, parsed<api::UpdateContainersResponse>(reply, "UpdateContainers' answer"));
  if (answer.failed_size() > 0) {
    // Gone, or the runtime could not apply it: tried again until vrid no longer holds it shared.
    return Error(ErrorCode::kUnavailable, "the runtime did not update container " + update.container_id());
  }
  return {};
}

std::string NriPlugin::runtime() const {
  MutexLock lock(mutex_);
  return runtime_;
}

Result<void> NriPlugin::runOnce() {
  VRI_ASSIGN_OR_RETURN(const int fd, connectTo(options_.socket));
  auto connection = std::make_shared<nri::TtrpcConnection>(
      fd,
      [this](const std::string& s, const std::string& m, const std::string& p,
             const nri::TtrpcConnection::RequestTime& time) { return handle(s, m, p, time); },
      options_.log, [this] { return carryOnSync(); });
  {
    MutexLock lock(mutex_);
    connection_ = connection;
  }
  if (stopping_) connection->close("stopping");
  api::RegisterPluginRequest registration;
  registration.set_plugin_name(options_.name);
  registration.set_plugin_idx(options_.index);
  registration.set_nri_version(kNriApiVersion);
  // The runtime configures and synchronizes the plugin around its answer to the registration.
  auto registered = connection->call(kRuntimeService, "RegisterPlugin", registration.SerializeAsString(),
                                     options_.registrationTimeout);
  if (!registered.ok()) {
    connection->finish("registration failed");
    deferredSync_.reset();
    Error error = registered.error();
    return error.addContext("NRI registration as " + options_.index + "-" + options_.name);
  }
  options_.log("registered with the runtime's NRI as " + options_.index + "-" + options_.name);
  {
    MutexLock lock(mutex_);
    registered_ = true;
  }
  while (!connection->waitClosed(std::chrono::seconds(1))) {
  }
  {
    MutexLock lock(mutex_);
    registered_ = false;
    connection_.reset();
  }
  // The session's serving thread is done: what its ledger sync left is the next session's to judge afresh.
  connection->finish("the session ended");
  deferredSync_.reset();
  return {};
}

void NriPlugin::run() {
  while (!stopping_) {
    const Result<void> session = runOnce();
    if (stopping_) break;
    options_.log(session.ok() ? "the runtime's NRI connection ended; connecting again"
                              : session.error().message() + "; trying again");
    std::this_thread::sleep_for(options_.reconnectPause);
  }
}

void NriPlugin::stop() {
  stopping_ = true;
  std::shared_ptr<nri::TtrpcConnection> connection;
  {
    MutexLock lock(mutex_);
    connection = connection_;
  }
  if (connection) connection->close("stopping");
}

Result<std::string> NriPlugin::handle(const std::string& service, const std::string& method, const std::string& payload,
                                      const nri::TtrpcConnection::RequestTime& time) {
  // The whole answer, vrid's calls and writes included, within half the runtime's time (NRI's
  // default 2 s), counted from when the request arrived: a plugin that misses it is disconnected
  // and the runtime creates containers without it, so a vrid that does not answer in time gets a
  // refusal sent in time instead.
  std::chrono::nanoseconds budget = options_.vridTimeout;
  if (time.timeout.count() > 0) budget = std::min(budget, time.timeout / 2);
  const auto now = std::chrono::steady_clock::now();
  auto answerBy = time.received + budget;
  if (placesSomething(method)) {
    // A request that waited past its time behind others has been given up on by the runtime: vrid
    // is not asked to place what will not run as placed.
    if (now >= answerBy) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - time.received);
      options_.log(method + ": waited " + std::to_string(waited.count()) + " ms for its turn, past the " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(budget).count()) +
                   " ms it had; refused without asking vrid");
      return Error(ErrorCode::kDeadlineExceeded, method + ": waited " + std::to_string(waited.count()) +
                                                     " ms in vri-nri-plugin's queue, past its " + "time; not placed");
    }
  } else {
    answerBy = std::max(answerBy, now + budget);  // what ends or reports is worth doing late
  }
  placement_.answerBy(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(answerBy - now));
  if (service != kPluginService) {
    return Error(ErrorCode::kUnimplemented,
                 "vri-nri-plugin serves " + std::string(kPluginService) + ", not " + service);
  }
  if (method == "Configure") return configure(payload);
  if (method == "Synchronize") return synchronize(payload);
  if (method == "StateChange") return stateChange(payload);
  if (method == "Shutdown") {
    options_.log("the runtime's NRI is shutting down");
    return api::Empty().SerializeAsString();
  }
  // The events' own methods (NRI v0.12 calls one per event, and StateChange only for a plugin that
  // lacks it; CreateContainer, UpdateContainer and StopContainer have always had theirs).
  return placementCall(method, payload);
}

Result<std::string> NriPlugin::configure(const std::string& payload) {
  VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::ConfigureRequest>(payload, "Configure's request"));
  {
    MutexLock lock(mutex_);
    runtime_ = request.runtime_name() + " " + request.runtime_version();
  }
  auto mask = nriEventMask(request.runtime_name(), request.runtime_version(), request.nri_version());
  if (!mask.ok()) {
    options_.log("Configure refused: " + mask.error().message());
    return mask.error();
  }
  syncPods_.clear();
  syncContainers_.clear();
  syncBytes_ = 0;
  deferredSync_.reset();  // the session's Synchronize judges the ledger afresh
  const bool unsolicited = nriTakesUnsolicitedUpdatesSafely(request.nri_version());
  placement_.setRuntimeStopsFailedSandboxes(
      runtimeStopsFailedSandboxes(request.runtime_name(), request.runtime_version()));
  runtimeUpdates_.setUnsolicitedAllowed(unsolicited);
  char hexMask[16];
  std::snprintf(hexMask, sizeof hexMask, "%x", static_cast<unsigned>(*mask));
  options_.log("configured by " + request.runtime_name() + " " + request.runtime_version() +
               (request.nri_version().empty() ? "" : " with NRI " + request.nri_version()) + " (events 0x" + hexMask +
               ")" + (unsolicited ? "" : "; shared-pool updates ride on its next answer (NRI before v0.12.1)"));
  api::ConfigureResponse response;
  response.set_events(*mask);
  return response.SerializeAsString();
}

Result<std::string> NriPlugin::synchronize(const std::string& payload) {
  VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::SynchronizeRequest>(payload, "Synchronize's request"));
  // The parts are kept until the last: bounded, so that a runtime (or what poses as one) cannot
  // grow the plugin without end. A node's pods take a small part of it.
  syncBytes_ += payload.size();
  if (syncBytes_ > kMaxSynchronizeBytes) {
    const size_t pods = syncPods_.size() + static_cast<size_t>(request.pods_size());
    syncPods_.clear();
    syncContainers_.clear();
    syncBytes_ = 0;
    options_.log("Synchronize refused: more than " + std::to_string(kMaxSynchronizeBytes >> 20) + " MiB in parts (" +
                 std::to_string(pods) + " pods so far)");
    return Error(
        ErrorCode::kResourceExhausted,
        "vri-nri-plugin takes at most " + std::to_string(kMaxSynchronizeBytes >> 20) + " MiB of Synchronize parts");
  }
  syncPods_.insert(syncPods_.end(), request.pods().begin(), request.pods().end());
  syncContainers_.insert(syncContainers_.end(), request.containers().begin(), request.containers().end());
  api::SynchronizeResponse response;
  if (request.more()) {
    response.set_more(true);  // the rest is to come; judged once it is all here
    return response.SerializeAsString();
  }
  const auto start = std::chrono::steady_clock::now();
  placement_.synchronized(syncPods_, syncContainers_);
  if (syncWithVrid()) {
    for (api::ContainerUpdate& update : placement_.updatesAfterSynchronize())
      *response.add_update() = std::move(update);
  }
  withPendingUpdates(runtimeUpdates_, response, "");
  // NRI's request timeout (2 s) bounds the whole synchronization: its last part's time, for bench/.
  options_.log("synchronized " + std::to_string(syncPods_.size()) + " pods, " + std::to_string(syncContainers_.size()) +
               " containers in " + millis(std::chrono::steady_clock::now() - start) + " (" +
               std::to_string(response.update_size()) + " updates)");
  if (sweeper_) {
    std::vector<std::string> sandboxes;
    for (const api::PodSandbox& pod : syncPods_) sandboxes.push_back(pod.id());
    sweeper_->watch(sandboxes);
  }
  syncPods_.clear();
  syncContainers_.clear();
  syncBytes_ = 0;
  // The shared pool is followed from the first synchronization on, once what the runtime holds is
  // recorded: a follower that started before would not know it, and would send every shared
  // container's values again at each start of the plugin.
  std::call_once(following_, [this] { vridConnection_.start(); });
  // What ran on its CPUs keeps them; what vrid placed anew is updated in the runtime's records.
  return response.SerializeAsString();
}

bool NriPlugin::syncWithVrid() {
  options_.log("synchronizing with the runtime: " + std::to_string(syncPods_.size()) + " pods, " +
               std::to_string(syncContainers_.size()) + " containers");
  // vrid's pods first: every id vrid binds was made in the runtime first, so the report has it.
  auto tenants = vrid_.listPods(placement_.vridScope());
  if (!tenants.ok()) {
    // The runtime waits for this answer; the ledger is judged again at the next connection.
    options_.log("vrid's pods are not available (" + tenants.error().message() +
                 "); the ledger is not checked against the runtime this time");
    return false;
  }
  auto report = std::make_unique<NriSnapshotRuntime>(syncPods_, syncContainers_);
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

bool NriPlugin::carryOnSync() {
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

void NriPlugin::podStopped(const api::PodSandbox& pod) {
  if (options_.releaser != nullptr) options_.releaser->sandboxStopped(pod.id());
}

void NriPlugin::podRemoved(const api::PodSandbox& pod) {
  if (options_.releaser != nullptr) options_.releaser->sandboxRemoved(pod.id());
  forgetPending(pod.id());
  if (sweeper_) sweeper_->removed(pod.id());
  placement_.podRemoved(pod);
}

Result<std::string> NriPlugin::stateChange(const std::string& payload) {
  VRI_ASSIGN_OR_RETURN(const auto event, parsed<api::StateChangeEvent>(payload, "StateChange's event"));
  switch (event.event()) {
    case api::RUN_POD_SANDBOX: VRI_TRY(placement_.runPodSandbox(event.pod())); break;
    case api::STOP_POD_SANDBOX: podStopped(event.pod()); break;
    case api::REMOVE_POD_SANDBOX: podRemoved(event.pod()); break;
    case api::REMOVE_CONTAINER:
      forgetPending(event.container().id());
      placement_.containerRemoved(event.pod(), event.container());
      break;
    default: break;
  }
  return api::Empty().SerializeAsString();
}

Result<std::string> NriPlugin::placementCall(const std::string& method, const std::string& payload) {
  if (method == "RunPodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::RunPodSandboxRequest>(payload, "RunPodSandbox's request"));
    return answer(placement_.runPodSandbox(request.pod()));
  }
  if (method == "CreateContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::CreateContainerRequest>(payload, "CreateContainer's request"));
    adoptFirst(request.pod().id());
    VRI_ASSIGN_OR_RETURN(auto created, placement_.createContainer(request));
    withPendingUpdates(runtimeUpdates_, created, request.container().id());
    return created.SerializeAsString();
  }
  if (method == "UpdateContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::UpdateContainerRequest>(payload, "UpdateContainer's request"));
    adoptFirst(request.pod().id());
    VRI_ASSIGN_OR_RETURN(auto updated, placement_.updateContainer(request));
    withPendingUpdates(runtimeUpdates_, updated, request.container().id());  // its own values are the answer's
    return updated.SerializeAsString();
  }
  if (method == "StopContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::StopContainerRequest>(payload, "StopContainer's request"));
    forgetPending(request.container().id());  // stopped: not adopted, if it waits
    placement_.containerStopped(request.pod(), request.container());
    api::StopContainerResponse stopped;
    withPendingUpdates(runtimeUpdates_, stopped, "");
    return stopped.SerializeAsString();
  }
  if (method == "StopPodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::StopPodSandboxRequest>(payload, "StopPodSandbox's request"));
    podStopped(request.pod());
    return api::StopPodSandboxResponse().SerializeAsString();
  }
  if (method == "RemovePodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request,
                         parsed<api::RemovePodSandboxRequest>(payload, "RemovePodSandbox's request"));
    podRemoved(request.pod());
    return api::RemovePodSandboxResponse().SerializeAsString();
  }
  if (method == "RemoveContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::RemoveContainerRequest>(payload, "RemoveContainer's request"));
    forgetPending(request.container().id());
    placement_.containerRemoved(request.pod(), request.container());
    return api::RemoveContainerResponse().SerializeAsString();
  }
  // Only subscribed events are relayed; anything else is a runtime that ignored the subscription.
  return Error(ErrorCode::kUnimplemented, "vri-nri-plugin does not handle " + method);
}

}  // namespace vri
