#include "kubelet-bridge/nri-plugin/nri_runtime_updates.h"

#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"
#include "kubelet-bridge/runtime_values.h"

namespace vri {

NriRuntimeUpdates::NriRuntimeUpdates(Send send)
    : PartialRuntime("the NRI plugin's runtime only takes updates"), send_(std::move(send)) {}

void NriRuntimeUpdates::record(const std::string& containerId, const runtime::v1::LinuxContainerResources& resources) {
  MutexLock lock(mutex_);
  held_[containerId] = resources;
}

void NriRuntimeUpdates::forget(const std::string& containerId) {
  MutexLock lock(mutex_);
  held_.erase(containerId);
  pending_.erase(containerId);
  exited_.erase(containerId);
}

void NriRuntimeUpdates::exited(const std::string& containerId) {
  MutexLock lock(mutex_);
  exited_.insert(containerId);
  pending_.erase(containerId);
}

bool NriRuntimeUpdates::hasExited(const std::string& containerId) const {
  MutexLock lock(mutex_);
  return exited_.count(containerId) > 0;
}

void NriRuntimeUpdates::setUnsolicitedAllowed(bool allowed) {
  MutexLock lock(mutex_);
  unsolicitedAllowed_ = allowed;
}

std::vector<::nri::pkg::api::v1alpha1::ContainerUpdate> NriRuntimeUpdates::takePending(const std::string& skip) {
  MutexLock lock(mutex_);
  std::vector<::nri::pkg::api::v1alpha1::ContainerUpdate> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->first == skip) {
      ++it;
      continue;
    }
    out.push_back(std::move(it->second));
    it = pending_.erase(it);
  }
  return out;
}

bool NriRuntimeUpdates::holds(const std::string& containerId,
                              const runtime::v1::LinuxContainerResources& wanted) const {
  MutexLock lock(mutex_);
  const auto held = held_.find(containerId);
  return held != held_.end() && runtimeHolds(held->second, wanted);
}

Result<void> NriRuntimeUpdates::updateContainerResources(const CallScope&,
                                                         const runtime::v1::UpdateContainerResourcesRequest& request) {
  ::nri::pkg::api::v1alpha1::ContainerUpdate update;
  update.set_container_id(request.container_id());
  *update.mutable_linux()->mutable_resources() = nri_terms::nriResources(request.linux());
  {
    MutexLock lock(mutex_);
    if (exited_.count(request.container_id())) {
      return Error(ErrorCode::kNotFound, "container " + request.container_id() + " has exited");
    }
    if (!unsolicitedAllowed_) {
      // Carried by the plugin's next answer; a container gone by then fails nothing.
      update.set_ignore_failure(true);
      pending_[request.container_id()] = std::move(update);
      held_[request.container_id()] = request.linux();
      return {};
    }
  }
  VRI_TRY(send_(update));
  record(request.container_id(), request.linux());
  return {};
}

Result<runtime::v1::ContainerStatusResponse> NriRuntimeUpdates::containerStatus(const CallScope&,
                                                                                const std::string& containerId, bool) {
  MutexLock lock(mutex_);
  if (exited_.count(containerId)) return Error(ErrorCode::kNotFound, "container " + containerId + " has exited");
  const auto held = held_.find(containerId);
  // Not seen in this session: the follower then sends its values, which is always right.
  if (held == held_.end()) return Error::failedPrecondition("container " + containerId + ": no values recorded");
  runtime::v1::ContainerStatusResponse out;
  out.mutable_status()->set_id(containerId);
  *out.mutable_status()->mutable_resources()->mutable_linux() = held->second;
  return out;
}

}  // namespace vri
