#include "kubelet-bridge/cri_shim.h"

#include <algorithm>
#include <cstdio>

#include "kubelet-bridge/upstream_call.h"

namespace vri {

namespace {

constexpr char kRuntime[] = "/runtime.v1.RuntimeService/";
constexpr char kPodUidLabel[] = "io.kubernetes.pod.uid";  // kubelet labels every container with its pod
constexpr auto kCleanupDeadline = std::chrono::seconds(10);

std::string method(const char* name) { return std::string(kRuntime) + name; }

grpc::Status unparsable(const char* what) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      std::string("vri-cri-shim: the ") + what + " request does not parse as CRI runtime.v1");
}

grpc::Status invalid(const Error& error) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "vri-cri-shim: " + error.message());
}

// vrid's answer as kubelet sees it: its refusal (code and reason) as it is, or,
// when vrid did not answer at all, UNAVAILABLE saying that nothing was created.
grpc::Status fromVrid(const std::string& what, const grpc::Status& status) {
  const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
  if (unreachable) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "vri-cri-shim: vrid did not answer " + what + " (" + status.error_message() +
                            "); pods and containers are created only with vrid's allocation");
  }
  return grpc::Status(status.error_code(), "vri: " + status.error_message());
}

std::chrono::system_clock::time_point cleanupDeadline() { return std::chrono::system_clock::now() + kCleanupDeadline; }

}  // namespace

CriShim::CriShim(std::shared_ptr<grpc::Channel> containerd, std::shared_ptr<grpc::Channel> vrid, CriShimOptions options)
    : containerd_(std::move(containerd)),
      vrid_(v1::Vri::NewStub(std::move(vrid))),
      options_(std::move(options)),
      refusals_([log = options_.log](const std::string& line) { log(line); }, steadyClock()) {}

std::map<std::string, UnaryHandler> CriShim::handlers() {
  using Member = grpc::Status (CriShim::*)(Caller&, const grpc::ByteBuffer&, grpc::ByteBuffer*);
  std::map<std::string, UnaryHandler> out;
  const auto add = [&](const char* name, Member member) {
    out[method(name)] = [this, member, name](Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
      grpc::Status status = (this->*member)(caller, request, reply);
      // Every refusal leaves one line (rate-limited): kubelet only retries, and says little.
      if (!status.ok()) refusals_.write(std::string(name) + " failed: " + status.error_message());
      return status;
    };
  };
  add("RunPodSandbox", &CriShim::runPodSandbox);
  add("CreateContainer", &CriShim::createContainer);
  add("UpdateContainerResources", &CriShim::updateContainerResources);
  add("RemoveContainer", &CriShim::removeContainer);
  add("RemovePodSandbox", &CriShim::removePodSandbox);
  return out;
}

std::unique_ptr<grpc::ClientContext> CriShim::vridContext(const Caller& caller) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::min(caller.deadline(), std::chrono::system_clock::now() + options_.vridTimeout));
  context->set_wait_for_ready(true);  // a vrid that is restarting answers within the deadline
  return context;
}

grpc::Status CriShim::runPodSandbox(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  runtime::v1::RunPodSandboxRequest run;
  if (!fromBytes(request, run)) return unparsable("RunPodSandbox");
  auto admit = cri::admitPodRequest(run.config());
  if (!admit.ok()) return invalid(admit.error());
  v1::PodAllocation admitted;
  grpc::Status status = vrid_->AdmitPod(vridContext(caller).get(), *admit, &admitted);
  if (!status.ok()) return fromVrid("RunPodSandbox for pod " + admit->pod_name(), status);

  grpc::Status created = callUpstream(containerd_, *upstreamContext(caller), method("RunPodSandbox"), request, reply);
  if (!created.ok()) {
    if (admitted.is_new()) undoPod(admit->pod_uid());
    return created;
  }
  runtime::v1::RunPodSandboxResponse response;
  if (!fromBytes(*reply, response)) return unparsable("RunPodSandbox answer's");
  admit->set_sandbox_id(response.pod_sandbox_id());
  v1::PodAllocation bound;
  status = vrid_->AdmitPod(vridContext(caller).get(), *admit, &bound);
  if (!status.ok()) {
    // The sandbox runs, but vrid does not know it: take it down so that kubelet retries from nothing.
    runtime::v1::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(response.pod_sandbox_id());
    removeFromContainerd(method("StopPodSandbox"), stop);
    runtime::v1::RemovePodSandboxRequest remove;
    remove.set_pod_sandbox_id(response.pod_sandbox_id());
    removeFromContainerd(method("RemovePodSandbox"), remove);
    if (admitted.is_new()) undoPod(admit->pod_uid());
    return fromVrid("the sandbox id of pod " + admit->pod_name(), status);
  }
  options_.log("RunPodSandbox " + admit->pod_name() + ": sandbox " + response.pod_sandbox_id() + " in " +
               admit->cgroup_parent());
  return grpc::Status::OK;
}

grpc::Status CriShim::createContainer(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration in_containerd{};  // the rest is the shim's and vrid's
  const auto timed = [&](auto call) {
    const auto before = std::chrono::steady_clock::now();
    grpc::Status status = call();
    in_containerd += std::chrono::steady_clock::now() - before;
    return status;
  };
  runtime::v1::CreateContainerRequest create;
  if (!fromBytes(request, create)) return unparsable("CreateContainer");
  auto admit = cri::admitContainerRequest(create);
  if (!admit.ok()) return invalid(admit.error());
  const std::string who = admit->pod_name() + "/" + admit->container_name();
  if (cri::mayGetExclusiveCpus(*admit)) {
    grpc::Status listed = timed([&] {
      return finishedContainers(caller, admit->pod_uid(), create.pod_sandbox_id(), admit->container_name(), *admit);
    });
    if (!listed.ok()) return listed;
  }
  cri::NodeCgroups node;
  if (grpc::Status known = nodeCgroups(caller, &node); !known.ok()) return fromVrid("GetNode", known);
  v1::ContainerAllocation allocation;
  grpc::Status status = vrid_->AdmitContainer(vridContext(caller).get(), *admit, &allocation);
  if (!status.ok()) return fromVrid("CreateContainer for " + who, status);

  cri::applyAllocation(allocation, node, *create.mutable_config()->mutable_linux()->mutable_resources());
  grpc::Status created = timed([&] {
    return callUpstream(containerd_, *upstreamContext(caller), method("CreateContainer"), toBytes(create), reply);
  });
  if (!created.ok()) {
    if (allocation.is_new()) undoContainer(*admit);
    return created;
  }
  runtime::v1::CreateContainerResponse response;
  if (!fromBytes(*reply, response)) return unparsable("CreateContainer answer's");
  admit->set_container_id(response.container_id());
  admit->clear_finished_containers();
  v1::ContainerAllocation bound;
  status = vrid_->AdmitContainer(vridContext(caller).get(), *admit, &bound);
  if (!status.ok()) {
    runtime::v1::RemoveContainerRequest remove;
    remove.set_container_id(response.container_id());
    removeFromContainerd(method("RemoveContainer"), remove);
    if (allocation.is_new()) undoContainer(*admit);
    return fromVrid("the container id of " + who, status);
  }
  const auto ms = [](std::chrono::steady_clock::duration d) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", std::chrono::duration<double, std::milli>(d).count());
    return std::string(text);
  };
  const auto vrid_writes = std::chrono::microseconds(allocation.cgroup_write_us());
  options_.log("CreateContainer " + who + ": " + response.container_id() + " on CPUs " + allocation.cpuset_cpus() +
               (allocation.exclusive() ? " (exclusive)" : " (shared pool)") + "; shim and vrid " +
               ms(std::chrono::steady_clock::now() - start - in_containerd) + " (vrid's cgroup writes " +
               ms(vrid_writes) + "), containerd " + ms(in_containerd));
  return grpc::Status::OK;
}

grpc::Status CriShim::updateContainerResources(Caller& caller, const grpc::ByteBuffer& request,
                                               grpc::ByteBuffer* reply) {
  runtime::v1::UpdateContainerResourcesRequest update;
  if (!fromBytes(request, update)) return unparsable("UpdateContainerResources");
  auto resize = cri::resizeRequest(update);
  if (!resize.ok()) return invalid(resize.error());
  v1::ContainerAllocation allocation;
  grpc::Status status = vrid_->ResizeContainer(vridContext(caller).get(), *resize, &allocation);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // Not one of vrid's (created before the shim ran): the runtime's own business.
    options_.log("UpdateContainerResources " + update.container_id() + ": not known to vrid, passed through");
    return callUpstream(containerd_, *upstreamContext(caller), method("UpdateContainerResources"), request, reply);
  }
  if (!status.ok()) return fromVrid("UpdateContainerResources for " + update.container_id(), status);
  cri::NodeCgroups node;
  if (grpc::Status known = nodeCgroups(caller, &node); !known.ok()) return fromVrid("GetNode", known);
  cri::applyAllocation(allocation, node, *update.mutable_linux());
  options_.log("UpdateContainerResources " + update.container_id() + ": CPUs " + allocation.cpuset_cpus());
  grpc::Status updated =
      callUpstream(containerd_, *upstreamContext(caller), method("UpdateContainerResources"), toBytes(update), reply);
  if (!updated.ok()) undoResize(update.container_id(), allocation.previous());
  return updated;
}

void CriShim::undoResize(const std::string& containerId, const v1::ContainerResources& previous) {
  // containerd kept the old values: vrid's ledger goes back to them too.
  v1::AdmitContainerRequest back;
  back.set_container_id(containerId);
  back.set_cpu_request_milli(previous.cpu_request_milli());
  back.set_cpu_limit_milli(previous.cpu_limit_milli());
  back.set_memory_limit_bytes(previous.memory_limit_bytes());
  back.set_memory_request_bytes(previous.memory_request_bytes());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.vridTimeout);
  v1::ContainerAllocation ignored;
  const grpc::Status status = vrid_->ResizeContainer(&context, back, &ignored);
  options_.log("UpdateContainerResources " + containerId + ": containerd refused it; vrid's resize " +
               (status.ok() ? std::string("undone") : "not undone: " + status.error_message()));
}

grpc::Status CriShim::removeContainer(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  runtime::v1::RemoveContainerRequest remove;
  if (!fromBytes(request, remove)) return unparsable("RemoveContainer");
  return removeThenRelease(caller, "RemoveContainer", remove.container_id(), request, reply,
                           [&](grpc::ClientContext* context, v1::Released* released) {
                             v1::ReleaseContainerRequest release;
                             release.set_container_id(remove.container_id());
                             return vrid_->ReleaseContainer(context, release, released);
                           });
}

grpc::Status CriShim::removePodSandbox(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  runtime::v1::RemovePodSandboxRequest remove;
  if (!fromBytes(request, remove)) return unparsable("RemovePodSandbox");
  return removeThenRelease(caller, "RemovePodSandbox", remove.pod_sandbox_id(), request, reply,
                           [&](grpc::ClientContext* context, v1::Released* released) {
                             v1::ReleasePodRequest release;
                             release.set_sandbox_id(remove.pod_sandbox_id());
                             return vrid_->ReleasePod(context, release, released);
                           });
}

grpc::Status CriShim::removeThenRelease(Caller& caller, const char* name, const std::string& id,
                                        const grpc::ByteBuffer& request, grpc::ByteBuffer* reply,
                                        const Release& release) {
  grpc::Status removed = callUpstream(containerd_, *upstreamContext(caller), method(name), request, reply);
  if (!removed.ok()) return removed;
  v1::Released released;
  grpc::Status status = release(vridContext(caller).get(), &released);
  if (!status.ok()) {
    // kubelet retries a failed removal; containerd's part is idempotent, so the release lands then.
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("vri-cri-shim: ") + name + " " + id +
                                                           " done, but vrid did not release it (" +
                                                           status.error_message() + "); retry");
  }
  options_.log(std::string(name) + " " + id +
               (released.released() ? ": released" : ": not the id vrid holds now, nothing released"));
  return grpc::Status::OK;
}

grpc::Status CriShim::finishedContainers(Caller& caller, const std::string& podUid, const std::string& sandboxId,
                                         const std::string& creating, v1::AdmitContainerRequest& admit) {
  runtime::v1::ListContainersRequest list;
  (*list.mutable_filter()->mutable_label_selector())[kPodUidLabel] = podUid;
  runtime::v1::ListContainersResponse listed;
  grpc::Status status = callUpstream(containerd_, *upstreamContext(caller), method("ListContainers"), list, &listed);
  if (!status.ok()) return status;
  std::vector<cri::SeenContainer> seen;
  for (const runtime::v1::Container& c : listed.containers()) {
    cri::SeenContainer one{c.metadata().name(), c.pod_sandbox_id(), c.state(), 0};
    if (c.state() == runtime::v1::CONTAINER_EXITED && c.pod_sandbox_id() == sandboxId &&
        c.metadata().name() != creating) {
      runtime::v1::ContainerStatusRequest ask;
      ask.set_container_id(c.id());
      runtime::v1::ContainerStatusResponse answer;
      status = callUpstream(containerd_, *upstreamContext(caller), method("ContainerStatus"), ask, &answer);
      if (!status.ok()) return status;
      one.exitCode = answer.status().exit_code();
    }
    seen.push_back(std::move(one));
  }
  for (const std::string& name : cri::finishedContainers(seen, creating, sandboxId))
    admit.add_finished_containers(name);
  return grpc::Status::OK;
}

grpc::Status CriShim::nodeCgroups(Caller& caller, cri::NodeCgroups* out) {
  out->v2 = options_.cgroupV2;
  return memoryNodes_.get(*vrid_, *vridContext(caller), &out->allMems);
}

void CriShim::undoContainer(const v1::AdmitContainerRequest& admit) {
  v1::ReleaseContainerRequest release;
  release.set_pod_uid(admit.pod_uid());
  release.set_container_name(admit.container_name());
  release.set_only_unbound(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.vridTimeout);
  v1::Released released;
  const grpc::Status status = vrid_->ReleaseContainer(&context, release, &released);
  if (!status.ok())
    options_.log("undo " + admit.pod_name() + "/" + admit.container_name() + " failed: " + status.error_message());
  // A pod that this create made known to vrid (no sandbox bound, no other container) goes with it.
  undoPod(admit.pod_uid());
}

void CriShim::undoPod(const std::string& podUid) {
  v1::ReleasePodRequest release;
  release.set_pod_uid(podUid);
  release.set_only_unbound(true);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + options_.vridTimeout);
  v1::Released released;
  const grpc::Status status = vrid_->ReleasePod(&context, release, &released);
  if (!status.ok()) options_.log("undo pod " + podUid + " failed: " + status.error_message());
}

void CriShim::removeFromContainerd(const std::string& name, const google::protobuf::MessageLite& request) {
  grpc::ClientContext context;
  context.set_deadline(cleanupDeadline());
  grpc::ByteBuffer ignored;
  const grpc::Status status = callUpstream(containerd_, context, name, toBytes(request), &ignored);
  if (!status.ok()) options_.log(name + " (cleaning up) failed: " + status.error_message());
}

}  // namespace vri
