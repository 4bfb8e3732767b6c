#include "vri/vri_service.h"

#include <future>

#include "base/quote.h"
#include "base/uuid.h"
#include "base/version.h"
#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"
#include "vri/api_convert.h"
#include "vri/ledger_views.h"

namespace vri {

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

std::string VriService::callerAgent(const grpc::ServerContextBase& context) {
  std::string agent = userAgent(context);
  if (!agent.empty() && access_ == SocketAccess::kAdmin) clients_.record(agent);
  return agent;
}

grpc::Status VriService::replied(const Result<void>& done, const google::protobuf::MessageLite& reply, Bytes& out) {
  if (!done.ok()) return toGrpcStatus(done.error());
  out = toBytes(reply);
  return grpc::Status::OK;
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
  const std::string agent = callerAgent(*context);
  auto request = std::make_shared<Request>();
  if (!fromBytes(*in, *request)) {
    account(method, agent, runs, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ""), started);
    return refuseUnparsed(context, method, Request::descriptor()->full_name());
  }
  auto answer = [request, out, call = std::move(call)] {
    Reply reply;
    const Result<void> done = call(*request, reply);
    return replied(done, reply, *out);
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

grpc::Status VriService::streamRefused(const char* method) const {
  const grpc::Status refused(grpc::StatusCode::RESOURCE_EXHAUSTED,
                             std::string(method) + ": this socket serves " + std::to_string(streams_.limit()) +
                                 " streams at once, and all are taken; retry when one ends");
  logRefusal(method, refused);
  return refused;
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

}  // namespace vri
