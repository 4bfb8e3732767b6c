// PartialRuntime: a RuntimeClient that serves only some calls and refuses every other one
// (UNIMPLEMENTED, naming the call and why), for the NRI plugin's two views of the runtime: one
// Synchronize's report (nri_snapshot_runtime.h, read-only) and the pool follower's updates
// (nri_runtime_updates.h). A subclass overrides what it serves.
#pragma once

#include <string>
#include <vector>

#include "kubelet-bridge/runtime_client.h"

namespace vri {

class PartialRuntime : public RuntimeClient {
 public:
  // `why` ends each refusal: "<call>: <why>".
  explicit PartialRuntime(std::string why) : why_(std::move(why)) {}

  Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(const CallScope&,
                                                           const runtime::v1::RunPodSandboxRequest&) override {
    return refused("RunPodSandbox");
  }
  Result<runtime::v1::CreateContainerResponse> createContainer(const CallScope&,
                                                               const runtime::v1::CreateContainerRequest&) override {
    return refused("CreateContainer");
  }
  Result<void> updateContainerResources(const CallScope&,
                                        const runtime::v1::UpdateContainerResourcesRequest&) override {
    return refused("UpdateContainerResources");
  }
  Result<void> startContainer(const CallScope&, const std::string&) override { return refused("StartContainer"); }
  Result<void> stopPodSandbox(const CallScope&, const std::string&) override { return refused("StopPodSandbox"); }
  Result<void> removePodSandbox(const CallScope&, const std::string&) override { return refused("RemovePodSandbox"); }
  Result<void> removeContainer(const CallScope&, const std::string&) override { return refused("RemoveContainer"); }
  Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope&) override {
    return refused("ListPodSandbox");
  }
  Result<std::vector<runtime::v1::Container>> listContainers(const CallScope&, const std::string&) override {
    return refused("ListContainers");
  }
  Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope&, const std::string&, bool) override {
    return refused("PodSandboxStatus");
  }
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope&, const std::string&, bool) override {
    return refused("ContainerStatus");
  }
  Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope&) override {
    return refused("RuntimeConfig");
  }

 private:
  Error refused(const char* call) const { return Error(ErrorCode::kUnimplemented, std::string(call) + ": " + why_); }

  const std::string why_;
};

}  // namespace vri
