#include "kubelet-bridge/cri-shim/cri_shim.h"

#include "kubelet-bridge/program_log.h"
#include "kubelet-bridge/vrid_refusal.h"

#include <algorithm>
#include <cstdio>

#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"

namespace vri {

namespace {

constexpr char kRuntime[] = "/runtime.v1.RuntimeService/";
constexpr auto kCleanupTimeout = std::chrono::seconds(10);

Error fromVrid(const std::string& what, const Error& error) { return refusalFromVrid("vri-cri-shim", what, error); }
Error invalid(const Error& error) { return unreadableRequest("vri-cri-shim", error); }

// A handler for GenericProxy: the request parsed as `Request`, the call, and its answer as bytes or a status.
template <typename Request, typename Call>
UnaryHandler handler(const char* name, RateLimitedLog& refusals, Call call) {
  return [name, &refusals, call](grpc::GenericCallbackServerContext& context, const grpc::ByteBuffer& bytes,
                                 grpc::ByteBuffer* reply) {
    Request request;
    grpc::Status status;
    if (!fromBytes(bytes, request)) {
      status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            std::string("vri-cri-shim: the ") + name + " request does not parse as CRI runtime.v1");
    } else {
      const CallScope kubelet{context.deadline(), &context, false};
      status = call(kubelet, std::move(request), reply);
    }
    // Every refusal leaves one line (rate-limited): kubelet only retries, and says little.
    if (!status.ok()) refusals.write(std::string(name) + " failed: " + status.error_message());
    return status;
  };
}

template <typename Reply>
grpc::Status answer(const Result<Reply>& result, grpc::ByteBuffer* reply) {
  if (!result.ok()) return toGrpcStatus(result.error());
  *reply = toBytes(*result);
  return grpc::Status::OK;
}

template <typename Reply>
grpc::Status answerEmpty(const Result<void>& result, grpc::ByteBuffer* reply) {
  if (!result.ok()) return toGrpcStatus(result.error());
  *reply = toBytes(Reply());
  return grpc::Status::OK;
}

}  // namespace

CriShim::CriShim(RuntimeClient& runtime, VridClient& vrid, CriShimOptions options)
    : runtime_(runtime),
      vrid_(vrid),
      options_(std::move(options)),
      refusals_([log = options_.log](const std::string& line) { log(line); }, steadyClock()) {}

std::map<std::string, UnaryHandler> CriShim::handlers() {
  using namespace runtime::v1;
  const auto method = [](const char* name) { return std::string(kRuntime) + name; };
  std::map<std::string, UnaryHandler> out;
  out[method("RunPodSandbox")] = handler<RunPodSandboxRequest>(
      "RunPodSandbox", refusals_, [this](const CallScope& kubelet, RunPodSandboxRequest r, grpc::ByteBuffer* reply) {
        return answer(runPodSandbox(kubelet, r), reply);
      });
  out[method("CreateContainer")] = handler<CreateContainerRequest>(
      "CreateContainer", refusals_,
      [this](const CallScope& kubelet, CreateContainerRequest r, grpc::ByteBuffer* reply) {
        return answer(createContainer(kubelet, std::move(r)), reply);
      });
  out[method("StartContainer")] = handler<StartContainerRequest>(
      "StartContainer", refusals_, [this](const CallScope& kubelet, StartContainerRequest r, grpc::ByteBuffer* reply) {
        return answerEmpty<StartContainerResponse>(startContainer(kubelet, r.container_id()), reply);
      });
  out[method("UpdateContainerResources")] = handler<UpdateContainerResourcesRequest>(
      "UpdateContainerResources", refusals_,
      [this](const CallScope& kubelet, UpdateContainerResourcesRequest r, grpc::ByteBuffer* reply) {
        return answerEmpty<UpdateContainerResourcesResponse>(updateContainerResources(kubelet, std::move(r)), reply);
      });
  out[method("RemoveContainer")] = handler<RemoveContainerRequest>(
      "RemoveContainer", refusals_,
      [this](const CallScope& kubelet, RemoveContainerRequest r, grpc::ByteBuffer* reply) {
        return answerEmpty<RemoveContainerResponse>(removeContainer(kubelet, r.container_id()), reply);
      });
  out[method("StopPodSandbox")] = handler<StopPodSandboxRequest>(
      "StopPodSandbox", refusals_, [this](const CallScope& kubelet, StopPodSandboxRequest r, grpc::ByteBuffer* reply) {
        return answerEmpty<StopPodSandboxResponse>(stopPodSandbox(kubelet, r.pod_sandbox_id()), reply);
      });
  out[method("RemovePodSandbox")] = handler<RemovePodSandboxRequest>(
      "RemovePodSandbox", refusals_,
      [this](const CallScope& kubelet, RemovePodSandboxRequest r, grpc::ByteBuffer* reply) {
        return answerEmpty<RemovePodSandboxResponse>(removePodSandbox(kubelet, r.pod_sandbox_id()), reply);
      });
  out[method("RuntimeConfig")] = handler<RuntimeConfigRequest>(
      "RuntimeConfig", refusals_, [this](const CallScope& kubelet, RuntimeConfigRequest, grpc::ByteBuffer* reply) {
        return answer(runtimeConfig(kubelet), reply);
      });
  return out;
}

Result<runtime::v1::RuntimeConfigResponse> CriShim::runtimeConfig(const CallScope& kubelet) {
  // Runtimes before containerd 2.0 answer UNIMPLEMENTED, and kubelet then uses its own
  // cgroupDriver (which vrid's kubelet_config check does not compare): passed on as it is.
  VRI_ASSIGN_OR_RETURN(runtime::v1::RuntimeConfigResponse config, runtime_.runtimeConfig(kubelet));
  auto node = vrid_.node(vridScope(kubelet));
  if (!node.ok()) return fromVrid("GetNode (to check the runtime's cgroup driver against it)", node.error());
  const std::string runtimeDriver = config.linux().cgroup_driver() == runtime::v1::SYSTEMD ? "systemd" : "cgroupfs";
  if (runtimeDriver != node->cgroup_driver()) {
    return Error::failedPrecondition(
        "vri: the runtime runs with the " + runtimeDriver + " cgroup driver, vrid with " + node->cgroup_driver() +
        " (cgroup_driver): kubelet, which takes its driver from this answer, would make pod cgroups that vrid "
        "does not know. Make containerd's SystemdCgroup and vrid's cgroup_driver agree");
  }
  return config;
}

CallScope CriShim::vridScope(const CallScope& kubelet) const {
  // A vrid that is restarting answers within the deadline.
  return CallScope{std::min(kubelet.deadline, std::chrono::system_clock::now() + options_.vridTimeout), nullptr, true};
}

Result<runtime::v1::RunPodSandboxResponse> CriShim::runPodSandbox(const CallScope& kubelet,
                                                                  const runtime::v1::RunPodSandboxRequest& run) {
  auto admit = cri::admitPodRequest(run.config());
  if (!admit.ok()) return invalid(admit.error());
  auto admitted = vrid_.admitPod(vridScope(kubelet), *admit);
  if (!admitted.ok()) return fromVrid("RunPodSandbox for pod " + admit->pod_name(), admitted.error());

  auto created = runtime_.runPodSandbox(kubelet, run);
  if (!created.ok()) {
    if (admitted->is_new()) undoPod(admit->pod_uid());
    return created;
  }
  admit->set_sandbox_id(created->pod_sandbox_id());
  if (auto bound = vrid_.admitPod(vridScope(kubelet), *admit); !bound.ok()) {
    // The sandbox runs, but vrid does not know it: take it down so that kubelet retries from nothing.
    takeDownSandbox(created->pod_sandbox_id());
    if (admitted->is_new()) undoPod(admit->pod_uid());
    return fromVrid("the sandbox id of pod " + admit->pod_name(), bound.error());
  }
  options_.log("RunPodSandbox " + admit->pod_name() + ": sandbox " + created->pod_sandbox_id() +
               (admit->outside_kubelet_tree() ? " outside kubelet's tree (no cgroup parent), on the shared pool"
                                              : " in " + admit->cgroup_parent()));
  return created;
}

Result<runtime::v1::CreateContainerResponse> CriShim::createContainer(const CallScope& kubelet,
                                                                      runtime::v1::CreateContainerRequest create) {
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration in_runtime{};  // the rest is the shim's and vrid's
  const auto timed = [&](auto call) {
    const auto before = std::chrono::steady_clock::now();
    auto result = call();
    in_runtime += std::chrono::steady_clock::now() - before;
    return result;
  };
  auto admit = cri::admitContainerRequest(create);
  if (!admit.ok()) return invalid(admit.error());
  const std::string who = admit->pod_name() + "/" + admit->container_name();
  // Facts for vrid, whatever the container asks for: which of the pod's containers are done.
  auto finished = timed(
      [&] { return finishedContainers(kubelet, admit->pod_uid(), create.pod_sandbox_id(), admit->container_name()); });
  if (!finished.ok()) return finished.error();
  for (const std::string& name : *finished) admit->add_finished_containers(name);
  auto node = nodeCgroups_.get(vrid_, vridScope(kubelet));
  if (!node.ok()) return fromVrid("GetNode", node.error());
  auto allocation = vrid_.admitContainer(vridScope(kubelet), *admit);
  if (!allocation.ok()) return fromVrid("CreateContainer for " + who, allocation.error());
  const auto vrid_writes = std::chrono::microseconds(allocation->cgroup_write_us());

  cri::applyAllocation(*allocation, *node, *create.mutable_config()->mutable_linux()->mutable_resources());
  auto created = timed([&] { return runtime_.createContainer(kubelet, create); });
  if (!created.ok()) {
    if (allocation->is_new()) undoContainer(*admit);
    return created;
  }
  admit->set_container_id(created->container_id());
  admit->clear_finished_containers();
  auto bound = vrid_.admitContainer(vridScope(kubelet), *admit);
  if (!bound.ok()) {
    takeDownContainer(created->container_id());
    if (allocation->is_new()) undoContainer(*admit);
    return fromVrid("the container id of " + who, bound.error());
  }
  // Another pod's exclusive grant between the admit and the bind narrows the shared pool while
  // this container has no id in vrid yet, so the pool follower cannot see it: the runtime gets
  // the pool as the bind found it, before kubelet starts the container.
  if (bound->cpuset_cpus() != allocation->cpuset_cpus()) {
    runtime::v1::UpdateContainerResourcesRequest update;
    update.set_container_id(created->container_id());
    cri::applyAllocation(*bound, *node, *update.mutable_linux());
    if (auto updated = timed([&] { return runtime_.updateContainerResources(kubelet, update); }); !updated.ok()) {
      takeDownContainer(created->container_id());
      if (allocation->is_new()) undoContainer(*admit);
      return updated.error();
    }
    options_.log("CreateContainer " + who + ": the shared pool changed while it was created, CPUs " +
                 allocation->cpuset_cpus() + " -> " + bound->cpuset_cpus());
    allocation = std::move(bound);
  }
  options_.log("CreateContainer " + who + ": " + created->container_id() + " on CPUs " + allocation->cpuset_cpus() +
               (allocation->exclusive() ? " (exclusive)" : " (shared pool)") + "; shim and vrid " +
               millis(std::chrono::steady_clock::now() - start - in_runtime) + " (vrid's cgroup writes " +
               millis(vrid_writes) + " for " + std::to_string(allocation->cgroup_writes()) + " files), runtime " +
               millis(in_runtime));
  return created;
}

// containerd takes any unique prefix of an id (crictl rmp 3f2a), vrid only the whole id the runtime
// answered at creation. An id of another length is resolved through the runtime's own status, so the
// call means the same to vrid as to the runtime; one the runtime does not know stays as it was.
namespace {

template <typename Status>
std::string wholeIdIn(const Result<Status>& status, const std::string& id) {
  return status.ok() && !status->status().id().empty() ? status->status().id() : id;
}

}  // namespace

std::string CriShim::wholeSandboxId(const CallScope& kubelet, const std::string& id) {
  if (id.size() == kWholeIdLength) return id;
  return wholeIdIn(runtime_.podSandboxStatus(kubelet, id, false), id);
}

std::string CriShim::wholeContainerId(const CallScope& kubelet, const std::string& id) {
  if (id.size() == kWholeIdLength) return id;
  return wholeIdIn(runtime_.containerStatus(kubelet, id, false), id);
}

// The runtime makes a container's cgroup when it starts it, not when it creates it, so the
// admission's writes found none: vrid writes it once the start has returned (with cpuset
// partitions, an exclusive container's partition forms here; until then the shared tenants keep its
// CPUs). The container runs either way: a vrid that cannot write it is logged, and reconcile repairs it.
Result<void> CriShim::startContainer(const CallScope& kubelet, const std::string& containerId) {
  VRI_TRY(runtime_.startContainer(kubelet, containerId));
  const auto start = std::chrono::steady_clock::now();
  const std::string whole = wholeContainerId(kubelet, containerId);
  auto written = vrid_.containerStarted(vridScope(kubelet), whole);
  if (!written.ok()) {
    if (written.error().code() != ErrorCode::kNotFound)  // not one of vrid's: nothing to write
      options_.log("StartContainer " + whole + ": vrid did not write its cgroups (" + written.error().message() +
                   "); reconcile repairs them");
    return {};
  }
  if (written->cgroup_writes() > 0)
    options_.log("StartContainer " + whole + ": shim and vrid " + millis(std::chrono::steady_clock::now() - start) +
                 " (vrid's cgroup writes " + millis(std::chrono::microseconds(written->cgroup_write_us())) + " for " +
                 std::to_string(written->cgroup_writes()) + " files)");
  return {};
}

Result<void> CriShim::updateContainerResources(const CallScope& kubelet,
                                               runtime::v1::UpdateContainerResourcesRequest update) {
  if (!update.container_id().empty()) update.set_container_id(wholeContainerId(kubelet, update.container_id()));
  auto resize = cri::resizeRequest(update);
  if (!resize.ok()) return invalid(resize.error());
  auto allocation = vrid_.resizeContainer(vridScope(kubelet), *resize);
  if (!allocation.ok() && allocation.error().code() == ErrorCode::kNotFound) {
    // Not one of vrid's (created before the shim ran): the runtime's own business.
    options_.log("UpdateContainerResources " + update.container_id() + ": not known to vrid, passed through");
    return runtime_.updateContainerResources(kubelet, update);
  }
  if (!allocation.ok()) return fromVrid("UpdateContainerResources for " + update.container_id(), allocation.error());
  auto node = nodeCgroups_.get(vrid_, vridScope(kubelet));
  if (!node.ok()) return fromVrid("GetNode", node.error());
  cri::applyAllocation(*allocation, *node, *update.mutable_linux());
  options_.log("UpdateContainerResources " + update.container_id() + ": CPUs " + allocation->cpuset_cpus());
  auto updated = runtime_.updateContainerResources(kubelet, update);
  if (!updated.ok()) undoResize(update.container_id(), allocation->previous());
  return updated;
}

Result<void> CriShim::removeContainer(const CallScope& kubelet, const std::string& containerId) {
  const std::string whole = wholeContainerId(kubelet, containerId);  // asked before it is gone
  VRI_TRY(runtime_.removeContainer(kubelet, containerId));
  v1::ReleaseContainerRequest release;
  release.set_container_id(whole);
  return afterRemoval("RemoveContainer", whole, vrid_.releaseContainer(vridScope(kubelet), release));
}

Result<void> CriShim::stopPodSandbox(const CallScope& kubelet, const std::string& sandboxId) {
  VRI_TRY(runtime_.stopPodSandbox(kubelet, sandboxId));
  if (options_.releaser != nullptr) options_.releaser->sandboxStopped(wholeSandboxId(kubelet, sandboxId));
  return {};
}

Result<void> CriShim::removePodSandbox(const CallScope& kubelet, const std::string& sandboxId) {
  const std::string whole = wholeSandboxId(kubelet, sandboxId);
  VRI_TRY(runtime_.removePodSandbox(kubelet, sandboxId));
  if (options_.releaser != nullptr) options_.releaser->sandboxRemoved(whole);
  v1::ReleasePodRequest release;
  release.set_sandbox_id(whole);
  return afterRemoval("RemovePodSandbox", whole, vrid_.releasePod(vridScope(kubelet), release));
}

Result<void> CriShim::afterRemoval(const char* call, const std::string& id, const Result<bool>& released) {
  if (!released.ok()) {
    // kubelet retries a failed removal; the runtime's part is idempotent, so the release lands then.
    return Error(ErrorCode::kUnavailable, std::string("vri-cri-shim: ") + call + " " + id +
                                              " done, but vrid did not release it (" + released.error().message() +
                                              "); retry");
  }
  options_.log(std::string(call) + " " + id +
               (*released ? ": released" : ": not the id vrid holds now, nothing released"));
  return {};
}

Result<std::vector<std::string>> CriShim::finishedContainers(const CallScope& kubelet, const std::string& podUid,
                                                             const std::string& sandboxId,
                                                             const std::string& creating) {
  VRI_ASSIGN_OR_RETURN(const auto listed, runtime_.listContainers(kubelet, podUid));
  std::vector<cri::SeenContainer> seen;
  for (const runtime::v1::Container& c : listed) {
    cri::SeenContainer one{c.metadata().name(), c.pod_sandbox_id(), c.state(), 0};
    if (c.state() == runtime::v1::CONTAINER_EXITED && c.pod_sandbox_id() == sandboxId &&
        c.metadata().name() != creating) {
      VRI_ASSIGN_OR_RETURN(const auto status, runtime_.containerStatus(kubelet, c.id(), false));
      one.exitCode = status.status().exit_code();
    }
    seen.push_back(std::move(one));
  }
  return cri::finishedContainers(seen, creating, sandboxId);
}

void CriShim::undoContainer(const v1::AdmitContainerRequest& admit) {
  v1::ReleaseContainerRequest release;
  release.set_pod_uid(admit.pod_uid());
  release.set_container_name(admit.container_name());
  release.set_only_unbound(true);
  if (auto released = vrid_.releaseContainer(CallScope::within(options_.vridTimeout), release); !released.ok())
    options_.log("undo " + admit.pod_name() + "/" + admit.container_name() + " failed: " + released.error().message());
  // A pod that this create made known to vrid (no sandbox bound, no other container) goes with it.
  undoPod(admit.pod_uid());
}

void CriShim::undoPod(const std::string& podUid) {
  v1::ReleasePodRequest release;
  release.set_pod_uid(podUid);
  release.set_only_unbound(true);
  if (auto released = vrid_.releasePod(CallScope::within(options_.vridTimeout), release); !released.ok())
    options_.log("undo pod " + podUid + " failed: " + released.error().message());
}

void CriShim::undoResize(const std::string& containerId, const v1::ContainerResources& previous) {
  // The runtime kept the old values: vrid's ledger goes back to them too.
  v1::AdmitContainerRequest back;
  back.set_container_id(containerId);
  back.set_cpu_request_milli(previous.cpu_request_milli());
  back.set_cpu_limit_milli(previous.cpu_limit_milli());
  back.set_memory_limit_bytes(previous.memory_limit_bytes());
  back.set_memory_request_bytes(previous.memory_request_bytes());
  const auto undone = vrid_.resizeContainer(CallScope::within(options_.vridTimeout), back);
  options_.log("UpdateContainerResources " + containerId + ": the runtime refused it; vrid's resize " +
               (undone.ok() ? std::string("undone") : "not undone: " + undone.error().message()));
}

void CriShim::takeDownSandbox(const std::string& sandboxId) {
  const CallScope cleanup = CallScope::within(kCleanupTimeout);
  if (auto stopped = runtime_.stopPodSandbox(cleanup, sandboxId); !stopped.ok())
    options_.log("StopPodSandbox " + sandboxId + " (cleaning up) failed: " + stopped.error().message());
  if (auto removed = runtime_.removePodSandbox(cleanup, sandboxId); !removed.ok())
    options_.log("RemovePodSandbox " + sandboxId + " (cleaning up) failed: " + removed.error().message());
}

void CriShim::takeDownContainer(const std::string& containerId) {
  if (auto removed = runtime_.removeContainer(CallScope::within(kCleanupTimeout), containerId); !removed.ok())
    options_.log("RemoveContainer " + containerId + " (cleaning up) failed: " + removed.error().message());
}

}  // namespace vri
