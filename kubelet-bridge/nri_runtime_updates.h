// NriRuntimeUpdates: the runtime as the shared-pool follower (shared_pool_follower.h) sees it when
// VRI is an NRI plugin. An update goes to the runtime as NRI's unsolicited UpdateContainers, on the
// plugin's current connection; a container's status is what the runtime was last told of it, or
// reported in Synchronize (NRI has no status call): the values NriPlacement records here as it
// answers CreateContainer and UpdateContainer, and as updates land. Every other call is refused:
// the follower makes none.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "cgroup-model/thread_annotations.h"
#include "kubelet-bridge/runtime_client.h"
#include "nri/nri_api.pb.h"

namespace vri {

class NriRuntimeUpdates final : public RuntimeClient {
 public:
  // Sends one update to the runtime (the plugin's UpdateContainers): UNAVAILABLE while the plugin
  // has no registered connection.
  using Send = std::function<Result<void>(const ::nri::pkg::api::v1alpha1::ContainerUpdate&)>;
  explicit NriRuntimeUpdates(Send send);

  // What the runtime holds for a container, as it was told or reported; forgotten when it goes.
  void record(const std::string& containerId, const runtime::v1::LinuxContainerResources& resources);
  void forget(const std::string& containerId);
  // Whether the runtime holds these values for the container already (unset values not compared).
  bool holds(const std::string& containerId, const runtime::v1::LinuxContainerResources& wanted) const;

  Result<void> updateContainerResources(const CallScope&, const runtime::v1::UpdateContainerResourcesRequest&) override;
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope&, const std::string& containerId,
                                                               bool verbose) override;

  Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(const CallScope&,
                                                           const runtime::v1::RunPodSandboxRequest&) override;
  Result<runtime::v1::CreateContainerResponse> createContainer(const CallScope&,
                                                               const runtime::v1::CreateContainerRequest&) override;
  Result<void> stopPodSandbox(const CallScope&, const std::string&) override;
  Result<void> removePodSandbox(const CallScope&, const std::string&) override;
  Result<void> removeContainer(const CallScope&, const std::string&) override;
  Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope&) override;
  Result<std::vector<runtime::v1::Container>> listContainers(const CallScope&, const std::string&) override;
  Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope&, const std::string&, bool) override;
  Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope&) override;

 private:
  const Send send_;
  mutable Mutex mutex_;
  std::map<std::string, runtime::v1::LinuxContainerResources> held_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
