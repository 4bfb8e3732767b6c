#include "vri/vri_service.h"

#include <future>

#include "base/quote.h"
#include "base/uuid.h"
#include "base/version.h"
#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"
#include "vri/api_convert.h"

namespace vri {

namespace {

void fillNode(const LedgerState& s, const Topology& topology, const NodeFacts& facts, v1::Node& reply) {
  reply.set_online_cpus(topology.onlineCpus().count());
  reply.set_online_cpu_list(topology.onlineCpus().format());
  for (const CpuLocation& cpu : topology.cpus()) {
    v1::CpuInfo& info = *reply.add_cpus();
    info.set_id(cpu.cpu);
    info.set_package(cpu.package);
    info.set_numa_node(cpu.numaNode);
    info.set_core(cpu.core);
  }
  reply.set_numa_nodes(static_cast<int>(topology.numaNodes().size()));
  reply.set_topology_source(topology.source());
  reply.set_packages(static_cast<int>(topology.packages().size()));
  reply.set_cores(static_cast<int>(topology.cores().size()));
  for (const NumaNode& node : topology.numaNodes()) {
    v1::NumaNodeInfo& info = *reply.add_numa();
    info.set_id(node.id);
    info.set_cpus(node.cpus.format());
    info.set_memory_bytes(node.memoryBytes);
    for (const auto& [size, pages] : node.hugepages) (*info.mutable_hugepages())[size] = pages;
    info.set_free_memory_bytes(s.numa.freeOn({node.id}, kRegularMemory));
    info.set_exclusive_cpus_available(s.pool.exclusiveCapacityWithin(node.cpus));
    for (const NumaNode& to : topology.numaNodes())
      (*info.mutable_distances())[to.id] = topology.distance(node.id, to.id);
  }
  reply.set_reserved_cpus(s.reserved().format());
  reply.set_shared_cpus(s.shared().format());
  for (const auto& [owner, grant] : s.grants()) (*reply.mutable_exclusive_cpus())[owner] = grant.all().format();
  reply.set_shared_demand_milli(s.totals.sharedDemandMilli);
  reply.set_shared_tenants(s.totals.sharedTenants);
  reply.set_admitted_memory_bytes(s.totals.admittedMemoryBytes);
  reply.set_pods(static_cast<int>(s.pods.size()));
  reply.set_vms(static_cast<int>(s.vms.size()));
  reply.set_capacity_cpu_milli(facts.allocatable.capacityCpuMilli);
  reply.set_allocatable_cpu_milli(facts.allocatable.allocatableCpuMilli);
  reply.set_capacity_memory_bytes(facts.allocatable.capacityMemoryBytes);
  reply.set_allocatable_memory_bytes(facts.allocatable.allocatableMemoryBytes);
  reply.set_strict_cpu_reservation(facts.strictCpuReservation);
  reply.set_cgroup_version(facts.cgroupVersion == CgroupVersion::kV2 ? "v2" : "v1");
  reply.set_cgroup_driver(std::string(kubeletDriverName(facts.kubeletDriver)));
  for (const auto& [name, value] : facts.options) (*reply.mutable_options())[name] = value;
}

}  // namespace

grpc::Status VriService::denyOnReadOnly(const char* method) const {
  if (access_ == SocketAccess::kAdmin) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      std::string(method) + " changes the ledger; use the admin socket");
}

grpc::Status VriService::getNode(const v1::GetNodeRequest&, v1::Node& reply) {
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
  return grpc::Status::OK;
}

void VriService::logRefusal(const char* method, const grpc::Status& status) const {
  refusals_.write(std::string(method) + " refused on the " + (access_ == SocketAccess::kAdmin ? "admin" : "read-only") +
                  " socket: " + std::string(grpcCodeName(status.error_code())) + ": " + status.error_message());
}

std::string VriService::userAgent(CallbackContext* context) {
  const auto agent = context->client_metadata().find("user-agent");
  return agent == context->client_metadata().end() ? std::string()
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
  std::string agent = userAgent(context);
  Reactor* reactor = context->DefaultReactor();
  if (auto denied = runs == Runs::kDecides ? denyOnReadOnly(method) : grpc::Status::OK; !denied.ok()) {
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
    decisions_.post([call = std::move(call), finish = std::move(finish)] { call(finish); });
    return reactor;
  }
  pacedScans_.post([this, call = std::move(call), finish = std::move(finish)] {
    scans_.awaitTurn();
    const Clock::TimePoint began = clock_.now();
    std::promise<void> ended;  // the scan runs on decisions_; the next waits for its end
    decisions_.post([&] {
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
                                       Runs runs, std::function<grpc::Status(const Request&, Reply&)> call) {
  const auto started = std::chrono::steady_clock::now();
  const std::string agent = userAgent(context);
  // Versions are what root's programs run: anyone may open the read-only socket and claim to be one.
  if (!agent.empty() && access_ == SocketAccess::kAdmin) clients_.record(agent);
  auto request = std::make_shared<Request>();
  if (!fromBytes(*in, *request)) {
    account(method, agent, runs, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ""), started);
    return refuseUnparsed(context, method, Request::descriptor()->full_name());
  }
  auto answer = [request, out, call = std::move(call)] {
    Reply reply;
    grpc::Status status = call(*request, reply);
    if (status.ok()) *out = toBytes(reply);
    return status;
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
                                       Runs runs, grpc::Status (VriService::*call)(const Request&, Reply&)) {
  return serve<Request, Reply>(context, method, in, out, runs,
                               [this, call](const Request& r, Reply& reply) { return (this->*call)(r, reply); });
}

VriService::Reactor* VriService::GetNode(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetNode", in, out, Runs::kAtOnce, &VriService::getNode);
}

VriService::Reactor* VriService::AdmitPod(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "AdmitPod", in, out, Runs::kDecides, &VriService::admitPod);
}

VriService::Reactor* VriService::AdmitContainer(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "AdmitContainer", in, out, Runs::kDecides, &VriService::admitContainer);
}

VriService::Reactor* VriService::ResizeContainer(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ResizeContainer", in, out, Runs::kDecides, &VriService::resizeContainer);
}

VriService::Reactor* VriService::ReleaseContainer(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ReleaseContainer", in, out, Runs::kDecides, &VriService::releaseContainer);
}

VriService::Reactor* VriService::ReleasePod(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ReleasePod", in, out, Runs::kDecides, &VriService::releasePod);
}

VriService::Reactor* VriService::AdmitVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "AdmitVm", in, out, Runs::kDecides, &VriService::admitVm);
}

VriService::Reactor* VriService::ReserveVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ReserveVm", in, out, Runs::kDecides, &VriService::reserveVm);
}

VriService::Reactor* VriService::ResizeVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ResizeVm", in, out, Runs::kDecides, &VriService::resizeVm);
}

VriService::Reactor* VriService::VmStarted(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "VmStarted", in, out, Runs::kDecides, &VriService::vmStarted);
}

VriService::Reactor* VriService::ReleaseVm(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ReleaseVm", in, out, Runs::kDecides, &VriService::releaseVm);
}

VriService::Reactor* VriService::ListTenants(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "ListTenants", in, out, Runs::kAtOnce, &VriService::listTenants);
}

VriService::Reactor* VriService::GetUsage(CallbackContext* c, const Bytes* in, Bytes* out) {
  return serve(c, "GetUsage", in, out, Runs::kAtOnce, &VriService::getUsage);  // vri_service_usage.cc
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

grpc::Status VriService::admitVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::admitVm);
}

grpc::Status VriService::reserveVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::reserveVm);
}

grpc::Status VriService::resizeVm(const v1::AdmitVmRequest& r, v1::VmAllocation& reply) {
  return vmDecision(r, reply, &NodeManager::resizeVm);
}

grpc::Status VriService::releaseVm(const v1::ReleaseVmRequest& r, v1::Released&) {
  if (!isUuid(r.uuid()))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "uuid: not a UUID: " + quoteForMessage(r.uuid()));
  auto released = node_.releaseVm(r.uuid());
  return released.ok() ? grpc::Status::OK : toGrpcStatus(released.error());
}

grpc::Status VriService::admitPod(const v1::AdmitPodRequest& request, v1::PodAllocation& reply) {
  const v1::AdmitPodRequest* r = &request;
  v1::PodAllocation* reply_ptr = &reply;
  auto pod = podFrom(*r, *kubeletNamer_);
  if (!pod.ok()) return toGrpcStatus(pod.error());
  std::vector<ContainerSpec> containers;
  for (const v1::ContainerResources& c : r->containers()) {
    auto spec = containerFrom(c);
    if (!spec.ok()) return toGrpcStatus(std::move(spec).error().addContext("containers"));
    containers.push_back(*spec);
  }
  if (!pod->outsideKubeletTree) {  // outside: the runtime's own place, which vrid does not name
    auto path = kubeletNamer_->pod(pod->qos, pod->uid);
    if (!path.ok()) return toGrpcStatus(path.error());
    reply_ptr->set_cgroup_path("/" + path->str());
  }
  bool recorded_now = false;
  if (!r->sandbox_id().empty() || containers.empty()) {
    auto recorded = node_.bindSandbox(*pod, r->sandbox_id());
    if (!recorded.ok()) return toGrpcStatus(recorded.error());
    recorded_now = *recorded;
    reply_ptr->set_is_new(*recorded);
  }
  if (containers.empty()) return grpc::Status::OK;
  auto placed = node_.admitPod(*pod, containers);
  if (!placed.ok()) {
    // All or nothing: a pod this call recorded goes again (decisions run one at a
    // time on this thread, so no other decision was taken on it in between).
    if (recorded_now) {
      if (auto undone = node_.releasePod(pod->uid, {}); !undone.ok())
        return toGrpcStatus(std::move(placed).error().addContext("undo failed too (" + undone.error().message() + ")"));
    }
    return toGrpcStatus(placed.error());
  }
  for (size_t i = 0; i < containers.size(); ++i)
    fillContainerAllocation(*pod, containers[i], (*placed)[i], *kubeletNamer_, *reply_ptr->add_containers());
  return grpc::Status::OK;
}

grpc::Status VriService::admitContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply) {
  const v1::AdmitContainerRequest* r = &request;
  auto pod = podFrom(*r, *kubeletNamer_);
  if (!pod.ok()) return toGrpcStatus(pod.error());
  auto container = containerFrom(*r);
  if (!container.ok()) return toGrpcStatus(container.error());
  for (const std::string& name : r->finished_containers()) {
    if (auto valid = validateContainerName(name); !valid.ok())
      return toGrpcStatus(std::move(valid).context("finished_containers").error());
  }
  const std::vector<std::string> finished(r->finished_containers().begin(), r->finished_containers().end());
  std::optional<CpuSet> running;
  if (!r->running_cpus().empty()) {
    auto parsed = CpuSet::parse(r->running_cpus());
    if (!parsed.ok()) return toGrpcStatus(std::move(parsed).context("running_cpus").error());
    running = *parsed;
  }
  WriteStats written;
  auto placed = running ? node_.adoptOrAdmitContainer(*pod, *container, *running)
                        : node_.admitContainer(*pod, *container, finished, &written);
  if (!placed.ok()) return toGrpcStatus(placed.error());
  fillContainerAllocation(*pod, *container, *placed, *kubeletNamer_, reply);
  reply.set_is_new(placed->placedNow);
  reply.set_cgroup_write_us(static_cast<uint64_t>(written.took.count()));
  return grpc::Status::OK;
}

grpc::Status VriService::releaseContainer(const v1::ReleaseContainerRequest& r, v1::Released& reply) {
  std::string uid = r.pod_uid(), name = r.container_name();
  ReleaseGuard guard{r.container_id(), r.only_unbound()};
  if (uid.empty()) {
    if (r.container_id().empty())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "pod_uid: give pod_uid and container_name, or container_id");
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(r.container_id());
    if (owner == nullptr || owner->isSandbox()) return grpc::Status::OK;  // not held by any container: nothing to do
    uid = owner->podUid;
    name = owner->container;
  } else if (name.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "container_name: must not be empty");
  }
  auto released = node_.releaseContainer(uid, name, guard);
  if (!released.ok()) return toGrpcStatus(released.error());
  reply.set_released(*released);
  return grpc::Status::OK;
}

grpc::Status VriService::releasePod(const v1::ReleasePodRequest& r, v1::Released& reply) {
  std::string uid = r.pod_uid();
  ReleaseGuard guard{r.sandbox_id(), r.only_unbound()};
  if (uid.empty()) {
    if (r.sandbox_id().empty())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pod_uid: give pod_uid or sandbox_id");
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(r.sandbox_id());
    if (owner == nullptr || !owner->isSandbox()) return grpc::Status::OK;  // not a current sandbox: nothing to do
    uid = owner->podUid;
  }
  auto released = node_.releasePod(uid, guard);
  if (!released.ok()) return toGrpcStatus(released.error());
  reply.set_released(*released);
  return grpc::Status::OK;
}

grpc::Status VriService::resizeContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply) {
  v1::AdmitContainerRequest by_id;  // the request with the container found by its runtime id
  const v1::AdmitContainerRequest* r = &request;
  if (request.pod_uid().empty() && request.container_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "container_id: must not be empty (or give pod_uid and container_name)");
  }
  // A resize changes a container's resources, never its pod's class: a class given must be a
  // class, and the pod's.
  std::optional<QosClass> given_qos;
  if (request.qos() != v1::QOS_UNSPECIFIED) {
    auto qos = qosFrom(request.qos());
    if (!qos.ok()) return toGrpcStatus(qos.error());
    given_qos = *qos;
  }
  if (request.pod_uid().empty()) {
    const StatePtr state = node_.state();
    const RuntimeOwner* owner = state->runtimeOwner(request.container_id());
    if (owner == nullptr || owner->isSandbox())
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "container_id: no container holds runtime id " + quoteForMessage(request.container_id()));
    by_id = request;
    by_id.set_pod_uid(owner->podUid);
    by_id.set_container_name(owner->container);
    r = &by_id;
  }
  auto container = containerFrom(*r);
  if (!container.ok()) return toGrpcStatus(container.error());
  const StatePtr state = node_.state();
  const PodRecord* pod = state->pod(r->pod_uid());
  if (!pod) return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod_uid: no pod " + r->pod_uid() + " was admitted");
  if (given_qos && *given_qos != pod->spec.qos) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "qos: pod " + quoteForMessage(pod->spec.name) + " is " +
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
  if (!placed.ok()) return toGrpcStatus(placed.error());
  fillContainerAllocation(pod->spec, *container, *placed, *kubeletNamer_, reply);
  *reply.mutable_previous() = std::move(previous);
  return grpc::Status::OK;
}

grpc::Status VriService::vmDecision(const v1::AdmitVmRequest& r, v1::VmAllocation& reply,
                                    Result<VmCpuPlacement> (NodeManager::*decide)(const VmSpec&)) {
  auto vm = vmFrom(r);
  if (!vm.ok()) return toGrpcStatus(vm.error());
  auto placed = (node_.*decide)(*vm);
  if (!placed.ok()) return toGrpcStatus(placed.error());
  const StatePtr now = node_.state();
  fillVmAllocation(vm->cpu, *placed, node_.wideSharedCpus(*now), reply);
  return grpc::Status::OK;
}

grpc::Status VriService::vmStarted(const v1::VmStartedRequest& request, v1::VmStartedReply& reply) {
  const v1::VmStartedRequest* r = &request;
  if (!isUuid(r->uuid()))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "uuid: not a UUID: " + quoteForMessage(r->uuid()));
  // The kernel's pids run from 1 to PID_MAX_LIMIT (2^22).
  if (r->qemu_pid() < 1 || r->qemu_pid() > (1 << 22))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "qemu_pid: not a process id: " + std::to_string(r->qemu_pid()));
  auto started = node_.vmStarted(r->uuid(), r->qemu_pid());
  if (!started.ok()) return toGrpcStatus(started.error());
  reply.set_scope(started->first.str());
  reply.set_cgroup_writes(started->second);
  return grpc::Status::OK;
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
    return grpc::Status::OK;
  }
  const auto subscription = node_.subscribe(request->recent());
  Event event;
  while (!context->IsCancelled()) {
    switch (subscription->next(std::chrono::milliseconds(200), event)) {
      case EventSubscription::Next::kClosed: return grpc::Status::OK;
      case EventSubscription::Next::kTimeout: break;
      case EventSubscription::Next::kEvent:
        if (!writer->Write(toEventMessage(event))) return grpc::Status::OK;  // the watcher went away
        break;
    }
  }
  return grpc::Status::OK;
}

grpc::Status VriService::reconcile(const v1::ReconcileRequest& r, v1::ReconcileReply& reply) {
  if (!r.dry_run()) {
    if (auto denied = denyOnReadOnly("Reconcile"); !denied.ok()) return denied;
  }
  auto report = node_.reconcile(r.dry_run());
  if (!report.ok()) return toGrpcStatus(report.error());
  for (const auto& line : report->drift) reply.add_drift(line);
  for (const auto& line : report->operations) reply.add_operations(line);
  for (const auto& line : report->notes) reply.add_notes(line);
  return grpc::Status::OK;
}

grpc::Status VriService::getTree(const v1::GetTreeRequest& r, v1::CgroupTree& reply) {
  auto view = node_.tree(r.compare_kernel());
  if (!view.ok()) return toGrpcStatus(view.error());
  const NodeFacts facts = node_.facts();
  fillCgroupTree(*view, facts.cgroupVersion, facts.kubeletDriver, reply);
  return grpc::Status::OK;
}

}  // namespace vri
