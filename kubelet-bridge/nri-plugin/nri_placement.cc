#include "kubelet-bridge/nri-plugin/nri_placement.h"

#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"
#include "kubelet-bridge/program_log.h"
#include "kubelet-bridge/vrid_refusal.h"

namespace vri {

namespace api = ::nri::pkg::api::v1alpha1;

namespace {

Error fromVrid(const std::string& what, const Error& error) { return refusalFromVrid("vri", what, error); }
Error invalid(const Error& error) { return unreadableRequest("vri", error); }

// The container as the finished-container rule sees it. NRI before v0.11 reports no exit code (nor
// when the container finished): an exited container's code is then unknown, and it is finished
// only when its sandbox was replaced.
cri::SeenContainer seenOf(const api::Container& container, runtime::v1::ContainerState state) {
  const bool knownExit = container.finished_at() != 0;
  return cri::SeenContainer{container.name(), container.pod_sandbox_id(), state,
                            knownExit ? container.exit_code() : -1};
}

}  // namespace

NriPlacement::NriPlacement(VridClient& vrid, NriRuntimeUpdates& runtime, RuntimeClient* cri, Log log)
    : vrid_(vrid), runtime_(runtime), cri_(cri), log_(std::move(log)) {}

CallScope NriPlacement::vridScope() const {
  // A vrid that is restarting answers within the deadline.
  return CallScope{deadline_, nullptr, true};
}

Result<api::RunPodSandboxResponse> NriPlacement::runPodSandbox(const api::PodSandbox& pod) {
  auto admit = cri::admitPodRequest(nri_terms::criPodConfig(pod));
  if (!admit.ok()) return invalid(admit.error());
  admit->set_sandbox_id(pod.id());
  auto admitted = vrid_.admitPod(vridScope(), *admit);
  const bool unanswered = !admitted.ok() && (admitted.error().code() == ErrorCode::kUnavailable ||
                                             admitted.error().code() == ErrorCode::kDeadlineExceeded);
  if (unanswered && !runtimeStopsFailedSandboxes_) {
    log_("RunPodSandbox " + admit->pod_name() + ": vrid did not answer (" + admitted.error().message() +
         "); the sandbox goes ahead, as this runtime would leave a failed one running, and its containers wait "
         "for vrid");
    unadmittedSandboxes_.insert(pod.id());
    return api::RunPodSandboxResponse();
  }
  if (!admitted.ok()) return fromVrid("RunPodSandbox for pod " + admit->pod_name(), admitted.error());
  unadmittedSandboxes_.erase(pod.id());
  log_("RunPodSandbox " + admit->pod_name() + ": sandbox " + pod.id() +
       (admit->outside_kubelet_tree() ? " outside kubelet's tree (no cgroup parent), on the shared pool"
                                      : " in " + admit->cgroup_parent()));
  return api::RunPodSandboxResponse();
}

Result<api::CreateContainerResponse> NriPlacement::createContainer(const api::CreateContainerRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  const runtime::v1::CreateContainerRequest create = nri_terms::criCreateRequest(request.pod(), request.container());
  auto admit = cri::admitContainerRequest(create);
  if (!admit.ok()) return invalid(admit.error());
  const std::string who = admit->pod_name() + "/" + admit->container_name();
  if (admit->hugepage_limits_size() == 0 && !admit->outside_kubelet_tree() && !toldNoHugepageLimits_) {
    toldNoHugepageLimits_ = true;
    log_("CreateContainer " + who +
         ": the runtime passes no hugepage limits, so pods' hugepages are in no books and no cgroup limits them "
         "(containerd: set disable_hugetlb_controller = false in [plugins.\"io.containerd.cri.v1.runtime\"])");
  }
  admit->set_container_id(request.container().id());
  if (unadmittedSandboxes_.count(request.pod().id())) {
    // Its RunPodSandbox went ahead without vrid: the pod is admitted now, with its sandbox bound.
    VRI_TRY(runPodSandbox(request.pod()));
    if (unadmittedSandboxes_.count(request.pod().id())) {
      return Error(ErrorCode::kUnavailable, "vri: vrid did not answer for pod " + admit->pod_name() +
                                                "; pods and containers are created only with vrid's allocation");
    }
  }
  for (const std::string& name : finishedBefore(admit->pod_uid(), admit->container_name(), request.pod().id())) {
    admit->add_finished_containers(name);
  }
  auto node = nodeCgroups_.get(vrid_, vridScope());
  if (!node.ok()) return fromVrid("GetNode", node.error());
  auto allocation = vrid_.admitContainer(vridScope(), *admit);
  if (!allocation.ok()) return fromVrid("CreateContainer for " + who, allocation.error());

  runtime::v1::LinuxContainerResources resources = create.config().linux().resources();
  cri::applyAllocation(*allocation, *node, resources);
  api::CreateContainerResponse response;
  *response.mutable_adjust()->mutable_linux()->mutable_resources() = nri_terms::nriResources(resources);
  runtime_.record(request.container().id(), resources);
  if (allocation->exclusive() && allocation->is_new()) {
    // vrid has narrowed their cgroups already; this tells the runtime, whose records (and runc's
    // next write) would otherwise put them back on the CPUs just taken.
    for (api::ContainerUpdate& update : updatesToLedger(*node, request.container().id(), true)) {
      *response.add_update() = std::move(update);
    }
  }
  note(admit->pod_uid(), request.container().id(),
       cri::SeenContainer{request.container().name(), request.pod().id(), runtime::v1::CONTAINER_CREATED, 0});
  // The runtime waits for this answer (NRI's 2-s request timeout): how long it took, and vrid's
  // share of it, for bench/cri_create_scale.
  log_("CreateContainer " + who + ": " + request.container().id() + " on CPUs " + allocation->cpuset_cpus() +
       (allocation->exclusive() ? " (exclusive)" : " (shared pool)") + "; plugin and vrid " +
       millis(std::chrono::steady_clock::now() - start) + " (vrid's cgroup writes " +
       millis(std::chrono::microseconds(allocation->cgroup_write_us())) + " for " +
       std::to_string(allocation->cgroup_writes()) + " files)" +
       (response.update_size() > 0 ? "; " + std::to_string(response.update_size()) + " shared containers narrowed"
                                   : ""));
  return response;
}

Result<api::UpdateContainerResponse> NriPlacement::updateContainer(const api::UpdateContainerRequest& request) {
  runtime::v1::UpdateContainerResourcesRequest update;
  update.set_container_id(request.container().id());
  *update.mutable_linux() = nri_terms::criResources(request.linux_resources());
  auto resize = cri::resizeRequest(update);
  if (!resize.ok()) return invalid(resize.error());
  auto allocation = vrid_.resizeContainer(vridScope(), *resize);
  if (!allocation.ok() && allocation.error().code() == ErrorCode::kNotFound) {
    log_("UpdateContainer " + request.container().id() + ": not known to vrid, left as asked");
    return api::UpdateContainerResponse();
  }
  if (!allocation.ok()) return fromVrid("UpdateContainer for " + request.container().id(), allocation.error());
  auto node = nodeCgroups_.get(vrid_, vridScope());
  if (!node.ok()) return fromVrid("GetNode", node.error());
  cri::applyAllocation(*allocation, *node, *update.mutable_linux());
  runtime_.record(request.container().id(), update.linux());
  api::UpdateContainerResponse response;
  api::ContainerUpdate* resized = response.add_update();
  resized->set_container_id(request.container().id());
  *resized->mutable_linux()->mutable_resources() = nri_terms::nriResources(update.linux());
  log_("UpdateContainer " + request.pod().name() + "/" + request.container().name() + ": CPUs " +
       allocation->cpuset_cpus());
  return response;
}

void NriPlacement::containerStopped(const api::PodSandbox& pod, const api::Container& container) {
  const cri::SeenContainer seen = seenOf(container, runtime::v1::CONTAINER_EXITED);
  log_("container " + pod.name() + "/" + container.name() + " stopped (exit code " +
       (seen.exitCode < 0 ? std::string("not reported") : std::to_string(seen.exitCode)) + ")");
  note(pod.uid(), container.id(), seen);
  runtime_.exited(container.id());
}

void NriPlacement::containerRemoved(const api::PodSandbox& pod, const api::Container& container) {
  runtime_.forget(container.id());
  if (auto found = containersOfPod_.find(pod.uid()); found != containersOfPod_.end()) {
    found->second.erase(container.id());
    if (found->second.empty()) containersOfPod_.erase(found);
  }
  v1::ReleaseContainerRequest request;
  request.set_container_id(container.id());
  releaseRemoved("container " + pod.name() + "/" + container.name(),
                 [this, request] { return vrid_.releaseContainer(vridScope(), request); });
}

void NriPlacement::podRemoved(const api::PodSandbox& pod) {
  unadmittedSandboxes_.erase(pod.id());
  if (auto found = containersOfPod_.find(pod.uid()); found != containersOfPod_.end()) {
    std::erase_if(found->second, [&](const auto& entry) { return entry.second.sandboxId == pod.id(); });
    if (found->second.empty()) containersOfPod_.erase(found);
  }
  v1::ReleasePodRequest request;
  request.set_sandbox_id(pod.id());
  releaseRemoved("pod " + pod.namespace_() + "/" + pod.name(),
                 [this, request] { return vrid_.releasePod(vridScope(), request); });
}

void NriPlacement::synchronized(const std::vector<api::PodSandbox>& pods,
                                const std::vector<api::Container>& containers) {
  containersOfPod_.clear();
  unadmittedSandboxes_.clear();  // the synchronization adopts them, sandboxes bound
  std::map<std::string, std::string> uidOfSandbox;
  for (const api::PodSandbox& pod : pods) uidOfSandbox[pod.id()] = pod.uid();
  for (const api::Container& container : containers) {
    const auto uid = uidOfSandbox.find(container.pod_sandbox_id());
    if (uid == uidOfSandbox.end()) continue;
    note(uid->second, container.id(), seenOf(container, nri_terms::criState(container.state())));
  }
  for (const api::Container& container : containers) {
    runtime_.record(container.id(), nri_terms::criResources(container.linux().resources()));
    if (container.state() == api::CONTAINER_STOPPED) runtime_.exited(container.id());
  }
}

std::vector<api::ContainerUpdate> NriPlacement::updatesToLedger(const cri::NodeCgroups& node, const std::string& except,
                                                                bool sharedOnly) {
  std::vector<api::ContainerUpdate> updates;
  auto pods = vrid_.listPods(vridScope());
  if (!pods.ok()) {
    log_("the runtime's records are left to the pool follower: " + pods.error().message());
    return updates;
  }
  for (const v1::Tenant& tenant : pods->tenants()) {
    if (tenant.pod().sandbox_id().empty()) continue;  // not run through the runtime
    for (const v1::ContainerInfo& c : tenant.pod().containers()) {
      const std::string& id = c.resources().id();
      if (id.empty() || id == except || (sharedOnly && c.allocation().exclusive())) continue;
      if (runtime_.hasExited(id)) continue;  // it keeps what it ran with
      runtime::v1::LinuxContainerResources wanted;
      cri::applyAllocation(c.allocation(), node, wanted);
      if (runtime_.holds(id, wanted)) continue;
      api::ContainerUpdate& update = updates.emplace_back();
      update.set_container_id(id);
      *update.mutable_linux()->mutable_resources() = nri_terms::nriResources(wanted);
      update.set_ignore_failure(true);  // a container gone meanwhile fails nothing
      runtime_.record(id, wanted);
    }
  }
  return updates;
}

std::vector<api::ContainerUpdate> NriPlacement::updatesAfterSynchronize() {
  // What the synchronization adopted or placed anew (a container created while the plugin was away
  // runs on every CPU; vrid has narrowed its cgroups already): the runtime's records follow in the
  // synchronization's answer.
  auto node = nodeCgroups_.get(vrid_, vridScope());
  if (!node.ok()) {
    // The containers' cgroups are as vrid placed them; only the runtime's records of them lag
    // until the next Synchronize.
    log_("the runtime's records of what the synchronization adopted are not updated: vrid's node cgroups: " +
         node.error().message());
    return {};
  }
  return updatesToLedger(*node, "", false);
}

void NriPlacement::note(const std::string& podUid, const std::string& containerId, cri::SeenContainer seen) {
  containersOfPod_[podUid][containerId] = std::move(seen);
}

std::vector<std::string> NriPlacement::finishedBefore(const std::string& podUid, const std::string& creating,
                                                      const std::string& sandboxId) {
  std::vector<cri::SeenContainer> seen;
  if (auto found = containersOfPod_.find(podUid); found != containersOfPod_.end()) {
    for (auto& [id, container] : found->second) {
      if (container.name != creating) learnExitFromCri(id, container);
      seen.push_back(container);
    }
  }
  return cri::finishedContainers(seen, creating, sandboxId);
}

void NriPlacement::learnExitFromCri(const std::string& containerId, cri::SeenContainer& seen) {
  if (cri_ == nullptr || (seen.state == runtime::v1::CONTAINER_EXITED && seen.exitCode >= 0)) return;
  // Within the answer's deadline, as vrid's calls; a runtime that does not say leaves the record as it is.
  auto status = cri_->containerStatus(CallScope{deadline_, nullptr, false}, containerId, false);
  if (!status.ok() || status->status().state() != runtime::v1::CONTAINER_EXITED) return;
  seen.state = runtime::v1::CONTAINER_EXITED;
  seen.exitCode = status->status().exit_code();
  log_("container " + seen.name + " (" + containerId.substr(0, 13) + ") exited with code " +
       std::to_string(seen.exitCode) + ", from the runtime's CRI");
}

void NriPlacement::releaseRemoved(const std::string& what, const std::function<Result<bool>()>& release) {
  // A release by id is idempotent: once more when the first call met a connection to a vrid that
  // has since restarted (gRPC fails that call rather than waiting for the new one).
  Result<bool> released = release();
  if (!released.ok() && released.error().code() == ErrorCode::kUnavailable) released = release();
  // A failed release is logged, never the runtime's failure: what it removed is gone either way,
  // and the next synchronization releases it.
  if (!released.ok()) {
    log_(what + " removed by the runtime; releasing it failed: " + released.error().message());
  } else {
    log_(what + " removed by the runtime; " + (*released ? "released" : "vrid held nothing under its id"));
  }
}

}  // namespace vri
