#include "vri/vri_service.h"

#include <future>

#include "base/quote.h"
#include "base/uuid.h"
#include "base/version.h"
#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"
#include "vri/api_convert.h"
#include "vri/config_diff.h"
#include "vri/ledger_views.h"
#include "vri/usage_convert.h"

namespace vri {

namespace {

Result<VmThreadMove> threadMoveFrom(const v1::ThreadPin& pin) {
  VmThreadMove move;
  move.thread = pin.thread() == v1::ThreadPin::EMULATOR ? VmThreadMove::Thread::kEmulator : VmThreadMove::Thread::kVcpu;
  move.id = pin.id();
  if (move.thread == VmThreadMove::Thread::kVcpu && move.id < 0) {
    return Error::invalidArgument("pins: vCPU id " + std::to_string(move.id) + " is negative");
  }
  if (pin.cpus() == "shared") return move;
  auto cpus = CpuSet::parse(pin.cpus());
  if (!cpus.ok()) return std::move(cpus).context("pins: " + move.name()).error();
  if (cpus->count() != 1) {
    return Error::invalidArgument("pins: " + move.name() + " given " + quoteForMessage(pin.cpus()) +
                                  ": a dedicated thread holds exactly one CPU of its own; give one CPU, or 'shared'");
  }
  move.cpu = cpus->first();
  return move;
}

v1::MoveVmReply::Live liveMessage(LivePinsOutcome::State state) {
  switch (state) {
    case LivePinsOutcome::State::kApplied: return v1::MoveVmReply::APPLIED;
    case LivePinsOutcome::State::kPending: return v1::MoveVmReply::PENDING;
    case LivePinsOutcome::State::kDefinitionFailed: return v1::MoveVmReply::DEFINITION_FAILED;
    case LivePinsOutcome::State::kNoLibvirt: return v1::MoveVmReply::NO_LIBVIRT;
  }
  return v1::MoveVmReply::LIVE_UNSPECIFIED;
}

Error samplingOff() { return Error::failedPrecondition("vrid does not sample usage (usage_interval_ms = 0)"); }

}  // namespace

Result<void> VriService::checkAdmin(const char* method) const {
  if (access_ == SocketAccess::kAdmin) return {};
  return Error(ErrorCode::kPermissionDenied, std::string(method) + " changes the ledger; use the admin socket");
}

Result<void> VriService::getNode(const v1::GetNodeRequest&, v1::Node& reply) {
  const StatePtr now = node_.state();
  fillNode(*now, node_.topology(), node_.facts(), reply);
  reply.set_cpuset_partitions(node_.cpusetPartitions());
  reply.set_shared_cpuset(node_.wideSharedCpus(*now).format());
  fillCapacity(node_.capacity(), *reply.mutable_capacity());
  reply.set_version(std::string(packageVersion()));
  for (const ClientVersion& client : clients_.list()) {
    v1::ClientVersion& out = *reply.add_clients();
    out.set_program(client.program);
    out.set_version(client.version);
    out.set_seconds_since_last_call(std::chrono::duration_cast<std::chrono::seconds>(client.sinceLastCall).count());
  }
  return {};
}

LedgerViewFacts VriService::viewFacts(const LedgerState& state) const {
  return {*kubeletNamer_, node_.wideSharedCpus(state), node_.vmMemoryOverheadBytes()};
}

Result<void> VriService::listTenants(const v1::ListTenantsRequest& request, v1::TenantList& reply) {
  const StatePtr now = node_.state();
  vri::listTenants(*now, viewFacts(*now), request.kind(), reply);
  return {};
}

Result<void> VriService::getTenant(const v1::GetTenantRequest& request, v1::Tenant& reply) {
  const StatePtr now = node_.state();
  return vri::getTenant(*now, viewFacts(*now), request, reply);
}

void VriService::logRefusal(const char* method, const grpc::Status& status) const {
  refusals_.write(std::string(method) + " refused on the " + (access_ == SocketAccess::kAdmin ? "admin" : "read-only") +
                  " socket: " + std::string(grpcCodeName(status.error_code())) + ": " + status.error_message());
}

std::string VriService::userAgent(const grpc::ServerContextBase& context) {
  const auto agent = context.client_metadata().find("user-agent");
  return agent == context.client_metadata().end() ? std::string()
                                                  : std::string(agent->second.data(), agent->second.size());
}

void VriService::account(const char* method, const std::string& agent, Runs runs, const grpc::Status& status,
                         std::chrono::steady_clock::time_point started) const {
  if (metrics_ == nullptr) return;
  metrics_->record(method, agent, runs == Runs::kDecides, status.error_code(),
                   std::chrono::steady_clock::now() - started);
}

VriService::Reactor* VriService::decide(CallbackContext* context, const char* method, Runs runs,
                                        std::function<grpc::Status()> call) {
  return decideAsync(context, method, runs, [call = std::move(call)](const Finish& finish) { finish(call()); });
}

VriService::Reactor* VriService::decideAsync(CallbackContext* context, const char* method, Runs runs,
                                             std::function<void(Finish)> call) {
  const auto started = std::chrono::steady_clock::now();
  std::string agent = userAgent(*context);
  Reactor* reactor = context->DefaultReactor();
  if (auto admin = runs == Runs::kDecides ? checkAdmin(method) : Result<void>(); !admin.ok()) {
    const grpc::Status denied = toGrpcStatus(admin.error());
    logRefusal(method, denied);
    account(method, agent, runs, denied, started);
    reactor->Finish(denied);
    return reactor;
  }
  const bool paced = runs == Runs::kScans && access_ == SocketAccess::kReadOnly;
  if (paced && !scans_.join()) {
    const grpc::Status busy(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            std::string(method) + ": " + std::to_string(ScanPacer::kMaxWaiting) +
                                " scans already wait their turn on the read-only socket; retry later");
    logRefusal(method, busy);
    account(method, agent, runs, busy, started);
    reactor->Finish(busy);
    return reactor;
  }
  if (!gate_.enter()) {
    const grpc::Status closing(grpc::StatusCode::UNAVAILABLE, "vrid is shutting down");
    if (paced) scans_.leave();
    account(method, agent, runs, closing, started);
    reactor->Finish(closing);
    return reactor;
  }
  Finish finish = [this, reactor, method, runs, started, agent = std::move(agent)](grpc::Status status) {
    if (!status.ok()) logRefusal(method, status);
    account(method, agent, runs, status, started);
    reactor->Finish(std::move(status));
    gate_.leave();
  };
  if (!paced) {
    decisions_->post([call = std::move(call), finish = std::move(finish)] { call(finish); });
    return reactor;
  }
  pacedScans_.post([this, call = std::move(call), finish = std::move(finish)] {
    scans_.awaitTurn();
    const Clock::TimePoint began = clock_.now();
    std::promise<void> ended;  // the scan runs on decisions_; the next waits for its end
    decisions_->post([&] {
      call([&](grpc::Status status) {
        finish(std::move(status));
        ended.set_value();
      });
    });
    ended.get_future().wait();
    scans_.finished(clock_.now() - began);
  });
  return reactor;
}

VriService::Reactor* VriService::refuseUnparsed(CallbackContext* context, const char* method, const std::string& type) {
  const grpc::Status bad(grpc::StatusCode::INVALID_ARGUMENT,
                         std::string(method) + ": the request does not parse as " + type);
  logRefusal(method, bad);
  Reactor* reactor = context->DefaultReactor();
  reactor->Finish(bad);
  return reactor;
}

template <typename Request, typename Reply>
VriService::Reactor* VriService::serve(CallbackContext* context, const char* method, const Bytes* in, Bytes* out,
                                       Runs runs, std::function<Result<void>(const Request&, Reply&)> call) {
  const auto started = std::chrono::steady_clock::now();
  const std::string agent = userAgent(*context);
  // Versions are what root's programs run: anyone may open the read-only socket and claim to be one.
  if (!agent.empty() && access_ == SocketAccess::kAdmin) clients_.record(agent);
  auto request = std::make_shared<Request>();
  if (!fromBytes(*in, *request)) {
    account(method, agent, runs, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ""), started);
    return refuseUnparsed(context, method, Request::descriptor()->full_name());
  }
  auto answer = [request, out, call = std::move(call)] {
    Reply reply;
    const Result<void> done = call(*request, reply);
    if (!done.ok()) return toGrpcStatus(done.error());
    *out = toBytes(reply);
    return grpc::Status::OK;
  };
  if (runs != Runs::kAtOnce) return decide(context, method, runs, std::move(answer));
  Reactor* reactor = context->DefaultReactor();
  grpc::Status status = answer();
  account(method, agent, runs, status, started);
  reactor->Finish(std::move(status));
  return reactor;
}

template <typename Request, typename Reply>
VriService::Reactor* VriService::serve(CallbackContext* context, const char* method, const Bytes* in, Bytes* out,
                                       Runs runs, Result<void> (VriService::*call)(const Request&, Reply&)) {
  return serve<Request, Reply>(context, method, in, out, runs,
                               [this, call](const Request& r, Reply& reply) { return (this->*call)(r, reply); });
}

VriService::Reactor* VriService::GetNode(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetNode", in, out, Runs::kAtOnce, &VriService::getNode);
}

VriService::Reactor* VriService::ListTenants(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ListTenants", in, out, Runs::kAtOnce, &VriService::listTenants);
}

VriService::Reactor* VriService::GetUsage(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetUsage", in, out, Runs::kAtOnce, &VriService::getUsage);
}

VriService::Reactor* VriService::GetTenant(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetTenant", in, out, Runs::kAtOnce, &VriService::getTenant);
}

// A dry run scans the whole node in the decisions' turn: from the read-only socket too, as vrictl
// reads there. Each such scan delays the decisions queued behind it by its own length.
VriService::Reactor* VriService::Reconcile(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "Reconcile", in, out, Runs::kScans, &VriService::reconcile);
}

VriService::Reactor* VriService::GetTree(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetTree", in, out, Runs::kScans, &VriService::getTree);
}

Result<void> VriService::admitVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::admitVm);
}

Result<void> VriService::reserveVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::reserveVm);
}

Result<void> VriService::resizeVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::resizeVm);
}

Result<void> VriService::releaseVm(const v1::ReleaseVmRequest& r, v1::Released&) {
  if (!isUuid(r.uuid())) return Error::invalidArgument("uuid: not a UUID: " + quoteForMessage(r.uuid()));
  auto released = node_.releaseVm(r.uuid());
  if (!released.ok()) return released.error();
  return {};
}

Result<void> VriService::admitPod(const v1::AdmitPodRequest& request, v1::PodAllocation& reply) {
  const v1::AdmitPodRequest* r = &request;
  v1::PodAllocation* reply_ptr = &reply;
  auto pod = podFrom(*r, *kubeletNamer_);
  if (!pod.ok()) return pod.error();
  std::vector<ContainerSpec> containers;
  for (const v1::ContainerResources& c : r->containers()) {
    auto spec = containerFrom(c);
    if (!spec.ok()) return std::move(spec).error().addContext("containers");
    containers.push_back(*spec);
  }
  if (!pod->outsideKubeletTree) {  // outside: the runtime's own place, which vrid does not name
    auto path = kubeletNamer_->pod(pod->qos, pod->uid);
    if (!path.ok()) return path.error();
    reply_ptr->set_cgroup_path("/" + path->str());
  }
  bool recorded_now = false;
  if (!r->sandbox_id().empty() || containers.empty()) {
    auto recorded = node_.bindSandbox(*pod, r->sandbox_id());
    if (!recorded.ok()) return recorded.error();
    recorded_now = *recorded;
    reply_ptr->set_is_new(*recorded);
  }
  if (containers.empty()) return {};
  auto placed = node_.admitPod(*pod, containers);
  if (!placed.ok()) {
    // All or nothing: a pod this call recorded goes again (decisions run one at a
    // time on this thread, so no other decision was taken on it in between).
    if (recorded_now) {
      if (auto undone = node_.releasePod(pod->uid, {}); !undone.ok())
        return std::move(placed).error().addContext("undo failed too (" + undone.error().message() + ")");
    }
    return placed.error();
  }
  for (size_t i = 0; i < containers.size(); ++i)
    fillContainerAllocation(*pod, containers[i], (*placed)[i], *kubeletNamer_, *reply_ptr->add_containers());
  return {};
}

Result<void> VriService::admitContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply) {
  const v1::AdmitContainerRequest* r = &request;
  auto pod = podFrom(*r, *kubeletNamer_);
  if (!pod.ok()) return pod.error();
  auto container = containerFrom(*r);
  if (!container.ok()) return container.error();
  for (const std::string& name : r->finished_containers()) {
    if (auto valid = validateContainerName(name); !valid.ok())
      return std::move(valid).context("finished_containers").error();
  }
  const std::vector<std::string> finished(r->finished_containers().begin(), r->finished_containers().end());
  std::optional<CpuSet> running;
  if (!r->running_cpus().empty()) {
    auto parsed = CpuSet::parse(r->running_cpus());
    if (!parsed.ok()) return std::move(parsed).context("running_cpus").error();
    running = *parsed;
  }
  WriteStats written;
  auto placed = running ? node_.adoptOrAdmitContainer(*pod, *container, *running)
                        : node_.admitContainer(*pod, *container, finished, &written);
  if (!placed.ok()) return placed.error();
  fillContainerAllocation(*pod, *container, *placed, *kubeletNamer_, reply);
  reply.set_is_new(placed->placedNow);
  reply.set_cgroup_write_us(static_cast<uint64_t>(written.took.count()));
  reply.set_cgroup_writes(written.writes);
  return {};
}

Result<void> VriService::releaseContainer(const v1::ReleaseContainerRequest& r, v1::Released& reply) {
  std::string uid = r.pod_uid(), name = r.container_name();
  ReleaseGuard guard{r.container_id(), r.only_unbound()};
  if (uid.empty()) {
    if (r.container_id().empty())
      return Error::invalidArgument("pod_uid: give pod_uid and container_name, or container_id");
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(r.container_id());
    if (owner == nullptr || owner->isSandbox()) return {};  // not held by any container: nothing to do
    uid = owner->podUid;
    name = owner->container;
  } else if (name.empty()) {
    return Error::invalidArgument("container_name: must not be empty");
  }
  auto released = node_.releaseContainer(uid, name, guard);
  if (!released.ok()) return released.error();
  reply.set_released(*released);
  return {};
}

Result<void> VriService::releasePod(const v1::ReleasePodRequest& r, v1::Released& reply) {
  std::string uid = r.pod_uid();
  ReleaseGuard guard{r.sandbox_id(), r.only_unbound()};
  if (uid.empty()) {
    if (r.sandbox_id().empty()) return Error::invalidArgument("pod_uid: give pod_uid or sandbox_id");
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(r.sandbox_id());
    if (owner == nullptr || !owner->isSandbox()) return {};  // not a current sandbox: nothing to do
    uid = owner->podUid;
  }
  auto released = node_.releasePod(uid, guard);
  if (!released.ok()) return released.error();
  reply.set_released(*released);
  return {};
}

Result<void> VriService::resizeContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply) {
  v1::AdmitContainerRequest by_id;  // the request with the container found by its runtime id
  const v1::AdmitContainerRequest* r = &request;
  if (request.pod_uid().empty() && request.container_id().empty()) {
    return Error::invalidArgument("container_id: must not be empty (or give pod_uid and container_name)");
  }
  // A resize changes a container's resources, never its pod's class: a class given must be a
  // class, and the pod's.
  std::optional<QosClass> given_qos;
  if (request.qos() != v1::QOS_UNSPECIFIED) {
    auto qos = qosFrom(request.qos());
    if (!qos.ok()) return qos.error();
    given_qos = *qos;
  }
  if (request.pod_uid().empty()) {
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(request.container_id());
    if (owner == nullptr || owner->isSandbox())
      return Error::notFound("container_id: no container holds runtime id " + quoteForMessage(request.container_id()));
    by_id = request;
    by_id.set_pod_uid(owner->podUid);
    by_id.set_container_name(owner->container);
    r = &by_id;
  }
  auto container = containerFrom(*r);
  if (!container.ok()) return container.error();
  const StatePtr state = node_.state();
  const PodRecord* pod = state->pod(r->pod_uid());
  if (!pod) return Error::notFound("pod_uid: no pod " + r->pod_uid() + " was admitted");
  if (given_qos && *given_qos != pod->spec.qos) {
    return Error::invalidArgument("qos: pod " + quoteForMessage(pod->spec.name) + " is " +
                                  std::string(qosClassName(pod->spec.qos)) +
                                  "; a resize does not change a pod's QoS class");
  }
  v1::ContainerResources previous;
  if (const auto known = pod->containers.find(container->name); known != pod->containers.end()) {
    const ContainerSpec& before = known->second.spec;
    previous.set_name(before.name);
    previous.set_id(before.id);
    previous.set_init(before.init);
    previous.set_cpu_request_milli(before.cpuRequestMilli);
    previous.set_cpu_limit_milli(before.cpuLimitMilli);
    previous.set_memory_limit_bytes(before.memoryLimitBytes.value_or(0));
    previous.set_memory_request_bytes(before.memoryRequestBytes.value_or(0));
  }
  auto placed = node_.resizeContainer(r->pod_uid(), *container);
  if (!placed.ok()) return placed.error();
  fillContainerAllocation(pod->spec, *container, *placed, *kubeletNamer_, reply);
  *reply.mutable_previous() = std::move(previous);
  return {};
}

Result<void> VriService::vmDecision(const v1::AdmitVmRequest& r, v1::VmAllocation& reply,
                                    Result<VmCpuPlacement> (NodeManager::*decide)(const VmSpec&)) {
  auto vm = vmFrom(r);
  if (!vm.ok()) return vm.error();
  auto placed = (node_.*decide)(*vm);
  if (!placed.ok()) return placed.error();
  const StatePtr now = node_.state();
  fillVmAllocation(vm->cpu, *placed, node_.wideSharedCpus(*now), reply);
  return {};
}

Result<void> VriService::vmStarted(const v1::VmStartedRequest& request, v1::VmStartedReply& reply) {
  const v1::VmStartedRequest* r = &request;
  if (!isUuid(r->uuid())) return Error::invalidArgument("uuid: not a UUID: " + quoteForMessage(r->uuid()));
  // The kernel's pids run from 1 to PID_MAX_LIMIT (2^22).
  if (r->qemu_pid() < 1 || r->qemu_pid() > (1 << 22))
    return Error::invalidArgument("qemu_pid: not a process id: " + std::to_string(r->qemu_pid()));
  auto started = node_.vmStarted(r->uuid(), r->qemu_pid());
  if (!started.ok()) return started.error();
  reply.set_scope(started->first.str());
  reply.set_cgroup_writes(started->second);
  return {};
}

Result<void> VriService::containerStarted(const v1::ContainerStartedRequest& request,
                                          v1::ContainerStartedReply& reply) {
  if (request.container_id().empty()) return Error::invalidArgument("container_id: must not be empty");
  const StatePtr state = node_.state();
  const RuntimeOwner* owner = state->runtimeOwner(request.container_id());
  if (owner == nullptr)
    return Error::notFound("container_id: no container holds runtime id " + quoteForMessage(request.container_id()));
  WriteStats written;
  VRI_TRY(node_.containerStarted(owner->podUid, request.container_id(), &written));
  reply.set_cgroup_writes(written.writes);
  reply.set_cgroup_write_us(static_cast<uint64_t>(written.took.count()));
  return {};
}

Result<void> VriService::handBack(const v1::HandBackRequest& request, v1::HandBackReply& reply) {
  KubeletHandBackRequest handBack;
  handBack.kubeletRootDir = request.kubelet_root_dir();
  if (handBack.kubeletRootDir.empty()) handBack.kubeletRootDir = node_.facts().options["kubelet_root_dir"];
  if (handBack.kubeletRootDir.empty())
    return Error::invalidArgument("kubelet_root_dir: vrid's is empty; name kubelet's --root-dir in the request");
  handBack.kubeletConfig = request.kubelet_config();
  if (handBack.kubeletConfig.empty()) handBack.kubeletConfig = node_.facts().options["kubelet_config"];
  handBack.dryRun = request.dry_run();
  handBack.writtenCpu = request.checkpoint();
  handBack.writtenMemory = request.memory_checkpoint();
  VRI_ASSIGN_OR_RETURN(KubeletHandBack handed, node_.handBack(handBack));
  reply.set_checkpoint_path(handed.checkpointPath);
  reply.set_checkpoint(handed.checkpointText);
  reply.set_default_cpus(handed.checkpoint.defaultCpuSet);
  int exclusive = 0;
  for (const auto& [pod, containers] : handed.checkpoint.entries) exclusive += static_cast<int>(containers.size());
  reply.set_exclusive_containers(exclusive);
  reply.set_cgroup_writes(handed.cgroupWrites);
  reply.set_memory_checkpoint_path(handed.memoryCheckpointPath);
  reply.set_memory_checkpoint(handed.memoryCheckpointText);
  int withMemory = 0;
  for (const auto& [pod, containers] : handed.memoryCheckpoint.entries)
    withMemory += static_cast<int>(containers.size());
  reply.set_memory_containers(withMemory);
  reply.set_kubelet_config(handBack.kubeletConfig);
  return {};
}

Result<ConfigControl*> VriService::configControl() const {
  if (config_ == nullptr)
    return Error::failedPrecondition("this vrid was started without a configuration file to read again");
  return config_;
}

Result<void> VriService::diffConfig(const v1::DiffConfigRequest& request, v1::ConfigDiffReply& reply) {
  DaemonConfig candidate = defaultConfig();
  std::string origin = request.origin().empty() ? "config" : request.origin();
  if (request.configuration_file()) {
    VRI_ASSIGN_OR_RETURN(ConfigControl * control, configControl());
    VRI_ASSIGN_OR_RETURN(candidate, control->readConfiguration(origin));
  } else {
    VRI_TRY(applyConfigText(candidate, request.config_text(), origin));
  }
  const StatePtr now = node_.state();
  VRI_ASSIGN_OR_RETURN(ConfigDiff diff,
                       vri::diffConfig(node_.facts().options, candidate, *now, node_.sharedTopology()));
  fillConfigDiff(diff, reply);
  reply.set_origin(origin);
  return {};
}

Result<void> VriService::applyConfig(const v1::ApplyConfigRequest& request, v1::ConfigDiffReply& reply) {
  VRI_ASSIGN_OR_RETURN(ConfigControl * control, configControl());
  std::string origin;
  VRI_ASSIGN_OR_RETURN(const DaemonConfig next, control->readConfiguration(origin));
  VRI_ASSIGN_OR_RETURN(const ConfigDiff diff, control->applyConfiguration(next, request.dry_run()));
  fillConfigDiff(diff, reply);
  reply.set_origin(origin);
  reply.set_applied(!request.dry_run());
  return {};
}

grpc::Status VriService::streamRefused(const char* method) const {
  const grpc::Status refused(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             std::string(method) + ": this socket serves " + std::to_string(streams_.limit()) +
                                 " streams at once, and all are taken; retry when one ends");
  logRefusal(method, refused);
  return refused;
}

grpc::Status VriService::Watch(Context* context, const v1::WatchRequest* request,
                               grpc::ServerWriter<v1::Event>* writer) {
  const StreamSlots::Slot slot(streams_);
  if (!slot.taken()) return streamRefused("Watch");
  if (request->recent_only()) {
    for (const Event& event : node_.recentEvents(request->recent())) {
      if (!writer->Write(toEventMessage(event))) break;
    }
    return {};
  }
  const auto subscription = node_.subscribe(request->recent());
  Event event;
  while (!context->IsCancelled()) {
    switch (subscription->next(std::chrono::milliseconds(200), event)) {
      case EventSubscription::Next::kClosed: return {};
      case EventSubscription::Next::kTimeout: break;
      case EventSubscription::Next::kEvent:
        if (!writer->Write(toEventMessage(event))) return {};  // the watcher went away
        break;
    }
  }
  return {};
}

Result<void> VriService::reconcile(const v1::ReconcileRequest& r, v1::ReconcileReply& reply) {
  if (!r.dry_run()) VRI_TRY(checkAdmin("Reconcile"));
  auto report = node_.reconcile(r.dry_run());
  if (!report.ok()) return report.error();
  for (const auto& line : report->drift) reply.add_drift(line);
  for (const auto& line : report->operations) reply.add_operations(line);
  for (const auto& line : report->notes) reply.add_notes(line);
  return {};
}

Result<void> VriService::getTree(const v1::GetTreeRequest& r, v1::CgroupTree& reply) {
  auto view = node_.tree(r.compare_kernel());
  if (!view.ok()) return view.error();
  const NodeFacts facts = node_.facts();
  fillCgroupTree(*view, facts.cgroupVersion, facts.kubeletDriver, reply);
  return {};
}

// ---- MoveVm: a running VM's vCPUs and emulator moved live. The decision runs on the decision thread
// like every other; libvirt's pins are then set on vrid's libvirt worker, and the call finishes
// there, with what libvirt answered.

Result<std::string> VriService::moveVm(const v1::MoveVmRequest& request) {
  std::vector<VmThreadMove> moves;
  for (const v1::ThreadPin& pin : request.pins()) {
    VRI_ASSIGN_OR_RETURN(VmThreadMove move, threadMoveFrom(pin));
    moves.push_back(move);
  }
  std::string uuid;
  {
    const StatePtr state = node_.state();
    VRI_ASSIGN_OR_RETURN(const VmRecord* vm, findVm(*state, request.vm()));
    uuid = vm->spec.uuid;
  }
  VRI_TRY(node_.moveVm(uuid, moves));
  return uuid;
}

VriService::Reactor* VriService::MoveVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  auto request = std::make_shared<v1::MoveVmRequest>();
  if (!fromBytes(*in, *request)) return refuseUnparsed(c, "MoveVm", v1::MoveVmRequest::descriptor()->full_name());
  return decideAsync(c, "MoveVm", Runs::kDecides, [this, request, out](const Finish& finish) {
    auto moved = moveVm(*request);
    if (!moved.ok()) return finish(toGrpcStatus(moved.error()));
    livePins_.setPins(*moved, request->config(), [this, uuid = *moved, out, finish](LivePinsOutcome outcome) {
      v1::MoveVmReply reply;
      const StatePtr state = node_.state();
      if (const VmRecord* vm = state->vm(uuid)) fillVm(*state, viewFacts(*state), *vm, *reply.mutable_vm());
      reply.set_live(liveMessage(outcome.state));
      reply.set_live_detail(outcome.detail);
      *out = toBytes(reply);
      finish(grpc::Status::OK);
    });
  });
}

// ---- GetUsage and WatchUsage: the sampler's frames, read without the ledger (usage_sampler.h).

Result<void> VriService::getUsage(const v1::GetUsageRequest& request, v1::UsageReport& reply) {
  if (usage_ == nullptr) return samplingOff();
  const auto& options = usage_->options();
  reply = usageReport(usage_->recent(static_cast<size_t>(request.history()) + 1), options.interval, options.history);
  return {};
}

grpc::Status VriService::WatchUsage(Context* context, const v1::WatchUsageRequest*,
                                    grpc::ServerWriter<v1::UsageReport>* writer) {
  if (usage_ == nullptr) return toGrpcStatus(samplingOff());
  const StreamSlots::Slot slot(streams_);
  if (!slot.taken()) return streamRefused("WatchUsage");
  const auto& options = usage_->options();
  // From the round after the latest: a watcher that wants the latest at once asks GetUsage.
  const FramePtr latest = usage_->latest();
  uint64_t sequence = latest ? latest->sequence : 0;
  while (!context->IsCancelled()) {
    // Woken at least every 200 ms to notice a caller that went away.
    const FramePtr frame = usage_->next(sequence, std::chrono::milliseconds(200));
    if (!frame) {
      if (usage_->stopped()) return grpc::Status::OK;
      continue;
    }
    sequence = frame->sequence;
    if (!writer->Write(usageReport({frame}, options.interval, options.history))) return grpc::Status::OK;
  }
  return grpc::Status::OK;
}

}  // namespace vri
