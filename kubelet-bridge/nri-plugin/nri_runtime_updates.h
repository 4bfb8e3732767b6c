// NriRuntimeUpdates: the runtime as the shared-pool follower (shared_pool_follower.h) sees it when
// VRI is an NRI plugin. An update goes to the runtime as NRI's unsolicited UpdateContainers, on the
// plugin's current connection, where that is safe: before NRI v0.12.1, an unsolicited update that
// meets a container event deadlocks containerd (the two take NRI's lock and containerd's in opposite
// orders: containerd#13733, fixed by containerd/nri#301). There the update waits, the latest per
// container, for the plugin's next answer to the runtime (takePending()), whose update list
// containerd applies under its own lock; vrid has written the kernel's cgroups already either way. a container's status
// is what the runtime was last told of it, or reported in Synchronize (NRI has no status call): the values NriPlacement
// records here as it answers CreateContainer and UpdateContainer, and as updates land. Every other call is refused: the
// follower makes none.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/thread_annotations.h"
#include "kubelet-bridge/partial_runtime.h"
#include "nri/nri_api.pb.h"

namespace vri {

class NriRuntimeUpdates final : public PartialRuntime {
 public:
  // Sends one update to the runtime (the plugin's UpdateContainers): UNAVAILABLE while the plugin
  // has no registered connection.
  using Send = std::function<Result<void>(const ::nri::pkg::api::v1alpha1::ContainerUpdate&)>;
  explicit NriRuntimeUpdates(Send send);

  // Whether UpdateContainers may be sent (the runtime's NRI is v0.12.1 or later); until told, not.
  void setUnsolicitedAllowed(bool allowed);
  // The updates waiting for the plugin's next answer (none once unsolicited updates are allowed),
  // taken: the latest per container, except `skip`'s.
  std::vector<::nri::pkg::api::v1alpha1::ContainerUpdate> takePending(const std::string& skip = "");

  // What the runtime holds for a container, as it was told or reported; forgotten when it goes.
  void record(const std::string& containerId, const runtime::v1::LinuxContainerResources& resources);
  void forget(const std::string& containerId);
  // A container that has exited keeps the values it ran with: nothing is sent for it any more
  // (its status is NOT_FOUND to the follower, as a container that is gone).
  void exited(const std::string& containerId);
  bool hasExited(const std::string& containerId) const;
  // Whether the runtime holds these values for the container already (unset values not compared).
  bool holds(const std::string& containerId, const runtime::v1::LinuxContainerResources& wanted) const;

  Result<void> updateContainerResources(const CallScope&, const runtime::v1::UpdateContainerResourcesRequest&) override;
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope&, const std::string& containerId,
                                                               bool verbose) override;

 private:
  const Send send_;
  mutable Mutex mutex_;
  std::map<std::string, runtime::v1::LinuxContainerResources> held_ VRI_GUARDED_BY(mutex_);
  bool unsolicitedAllowed_ VRI_GUARDED_BY(mutex_) = false;
  std::map<std::string, ::nri::pkg::api::v1alpha1::ContainerUpdate> pending_ VRI_GUARDED_BY(mutex_);
  std::set<std::string> exited_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
