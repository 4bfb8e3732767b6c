#include "nri/plugin_session.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "nri/runtime_versions.h"

namespace vri::nri {

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

// A handler's answer as the ttRPC payload, or its error.
template <typename Message>
Result<std::string> answer(const Result<Message>& result) {
  if (!result.ok()) return result.error();
  return result->SerializeAsString();
}

// The runtime's requests that ask the plugin to place something (a late one is refused, not placed).
bool placesSomething(const std::string& method) {
  return method == "RunPodSandbox" || method == "CreateContainer" || method == "UpdateContainer";
}

}  // namespace

PluginSession::PluginSession(PluginHandler& handler, PluginSessionOptions options)
    : handler_(handler), options_(std::move(options)) {}

Result<void> PluginSession::updateContainer(const api::ContainerUpdate& update) {
  std::shared_ptr<TtrpcConnection> connection;
  {
    MutexLock lock(mutex_);
    if (registered_) connection = connection_;
  }
  if (!connection) return Error(ErrorCode::kUnavailable, "not registered with the runtime's NRI");
  api::UpdateContainersRequest request;
  *request.add_update() = update;
  VRI_ASSIGN_OR_RETURN(const std::string reply, connection->call(kRuntimeService, "UpdateContainers",
                                                                 request.SerializeAsString(), options_.answerTimeout));
  VRI_ASSIGN_OR_RETURN(const auto answer, parsed<api::UpdateContainersResponse>(reply, "UpdateContainers' answer"));
  if (answer.failed_size() > 0) {
    // Gone, or the runtime could not apply it.
    return Error(ErrorCode::kUnavailable, "the runtime did not update container " + update.container_id());
  }
  return {};
}

std::string PluginSession::runtime() const {
  MutexLock lock(mutex_);
  return runtime_;
}

Result<void> PluginSession::runOnce() {
  VRI_ASSIGN_OR_RETURN(const int fd, connectTo(options_.socket));
  auto connection = std::make_shared<TtrpcConnection>(
      fd,
      [this](const std::string& s, const std::string& m, const std::string& p,
             const TtrpcConnection::RequestTime& time) { return handle(s, m, p, time); },
      options_.log, [this] { return handler_.idle(); });
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
    handler_.sessionEnded();
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
  // The session's serving thread is done: no handler call runs after this.
  connection->finish("the session ended");
  handler_.sessionEnded();
  return {};
}

void PluginSession::run() {
  while (!stopping_) {
    const Result<void> session = runOnce();
    if (stopping_) break;
    options_.log(session.ok() ? "the runtime's NRI connection ended; connecting again"
                              : session.error().message() + "; trying again");
    std::this_thread::sleep_for(options_.reconnectPause);
  }
}

void PluginSession::stop() {
  stopping_ = true;
  std::shared_ptr<TtrpcConnection> connection;
  {
    MutexLock lock(mutex_);
    connection = connection_;
  }
  if (connection) connection->close("stopping");
}

Result<std::string> PluginSession::handle(const std::string& service, const std::string& method,
                                          const std::string& payload, const TtrpcConnection::RequestTime& time) {
  // The whole answer, the handler's work included, within half the runtime's time (NRI's default
  // 2 s), counted from when the request arrived: a plugin that misses it is disconnected and the
  // runtime creates containers without it, so a handler that cannot answer in time has its refusal
  // sent in time instead.
  std::chrono::nanoseconds budget = options_.answerTimeout;
  if (time.timeout.count() > 0) budget = std::min(budget, time.timeout / 2);
  const auto now = std::chrono::steady_clock::now();
  auto answerBy = time.received + budget;
  if (placesSomething(method)) {
    // A request that waited past its time behind others has been given up on by the runtime: the
    // handler is not asked to place what will not run as placed.
    if (now >= answerBy) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - time.received);
      options_.log(method + ": waited " + std::to_string(waited.count()) + " ms for its turn, past the " +
                   std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(budget).count()) +
                   " ms it had; refused without asking " + options_.placer);
      return Error(ErrorCode::kDeadlineExceeded, method + ": waited " + std::to_string(waited.count()) + " ms in " +
                                                     options_.program + "'s queue, past its time; not placed");
    }
  } else {
    answerBy = std::max(answerBy, now + budget);  // what ends or reports is worth doing late
  }
  handler_.answerBy(std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(answerBy - now));
  if (service != kPluginService) {
    return Error(ErrorCode::kUnimplemented,
                 options_.program + " serves " + std::string(kPluginService) + ", not " + service);
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
  return event(method, payload);
}

Result<std::string> PluginSession::configure(const std::string& payload) {
  VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::ConfigureRequest>(payload, "Configure's request"));
  {
    MutexLock lock(mutex_);
    runtime_ = request.runtime_name() + " " + request.runtime_version();
  }
  auto mask = nriEventMask(handler_.events(), request.runtime_name(), request.runtime_version(), request.nri_version());
  if (!mask.ok()) {
    options_.log("Configure refused: " + mask.error().message());
    return mask.error();
  }
  syncPods_.clear();
  syncContainers_.clear();
  syncBytes_ = 0;
  handler_.configured(ConfiguringRuntime{
      .name = request.runtime_name(),
      .version = request.runtime_version(),
      .nriVersion = request.nri_version(),
      .takesUnsolicitedUpdates = nriTakesUnsolicitedUpdatesSafely(request.nri_version()),
      .stopsFailedSandboxes = runtimeStopsFailedSandboxes(request.runtime_name(), request.runtime_version()),
  });
  char hexMask[16];
  std::snprintf(hexMask, sizeof hexMask, "%x", static_cast<unsigned>(*mask));
  options_.log("configured by " + request.runtime_name() + " " + request.runtime_version() +
               (request.nri_version().empty() ? "" : " with NRI " + request.nri_version()) + " (events 0x" + hexMask +
               ")");
  api::ConfigureResponse response;
  response.set_events(*mask);
  return response.SerializeAsString();
}

Result<std::string> PluginSession::synchronize(const std::string& payload) {
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
    return Error(ErrorCode::kResourceExhausted, options_.program + " takes at most " +
                                                    std::to_string(kMaxSynchronizeBytes >> 20) +
                                                    " MiB of Synchronize parts");
  }
  syncPods_.insert(syncPods_.end(), request.pods().begin(), request.pods().end());
  syncContainers_.insert(syncContainers_.end(), request.containers().begin(), request.containers().end());
  if (request.more()) {
    api::SynchronizeResponse response;
    response.set_more(true);  // the rest is to come; judged once it is all here
    return response.SerializeAsString();
  }
  const api::SynchronizeResponse response = handler_.synchronize(syncPods_, syncContainers_);
  syncPods_.clear();
  syncContainers_.clear();
  syncBytes_ = 0;
  return response.SerializeAsString();
}

Result<std::string> PluginSession::stateChange(const std::string& payload) {
  VRI_ASSIGN_OR_RETURN(const auto event, parsed<api::StateChangeEvent>(payload, "StateChange's event"));
  switch (event.event()) {
    case api::RUN_POD_SANDBOX: VRI_TRY(handler_.runPodSandbox(event.pod())); break;
    case api::STOP_POD_SANDBOX: handler_.stopPodSandbox(event.pod()); break;
    case api::REMOVE_POD_SANDBOX: handler_.removePodSandbox(event.pod()); break;
    case api::START_CONTAINER: handler_.startContainer(event.pod(), event.container()); break;
    case api::REMOVE_CONTAINER: handler_.removeContainer(event.pod(), event.container()); break;
    default: break;
  }
  return api::Empty().SerializeAsString();
}

Result<std::string> PluginSession::event(const std::string& method, const std::string& payload) {
  if (method == "RunPodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::RunPodSandboxRequest>(payload, "RunPodSandbox's request"));
    VRI_TRY(handler_.runPodSandbox(request.pod()));
    return api::RunPodSandboxResponse().SerializeAsString();
  }
  if (method == "CreateContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::CreateContainerRequest>(payload, "CreateContainer's request"));
    return answer(handler_.createContainer(request));
  }
  if (method == "UpdateContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::UpdateContainerRequest>(payload, "UpdateContainer's request"));
    return answer(handler_.updateContainer(request));
  }
  if (method == "StartContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::StartContainerRequest>(payload, "StartContainer's request"));
    handler_.startContainer(request.pod(), request.container());
    return api::StartContainerResponse().SerializeAsString();
  }
  if (method == "StopContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::StopContainerRequest>(payload, "StopContainer's request"));
    return handler_.stopContainer(request).SerializeAsString();
  }
  if (method == "StopPodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::StopPodSandboxRequest>(payload, "StopPodSandbox's request"));
    handler_.stopPodSandbox(request.pod());
    return api::StopPodSandboxResponse().SerializeAsString();
  }
  if (method == "RemovePodSandbox") {
    VRI_ASSIGN_OR_RETURN(const auto request,
                         parsed<api::RemovePodSandboxRequest>(payload, "RemovePodSandbox's request"));
    handler_.removePodSandbox(request.pod());
    return api::RemovePodSandboxResponse().SerializeAsString();
  }
  if (method == "RemoveContainer") {
    VRI_ASSIGN_OR_RETURN(const auto request, parsed<api::RemoveContainerRequest>(payload, "RemoveContainer's request"));
    handler_.removeContainer(request.pod(), request.container());
    return api::RemoveContainerResponse().SerializeAsString();
  }
  // Only subscribed events are relayed; anything else is a runtime that ignored the subscription.
  return Error(ErrorCode::kUnimplemented, options_.program + " does not handle " + method);
}

}  // namespace vri::nri
