// RuntimeClient: the container runtime as the kubelet side calls it, one
// Result per call. GrpcRuntimeClient (grpc_runtime_client.h) speaks CRI to
// containerd; tests bring tests/support/fake_runtime.h. The CRI handlers, the
// pool follower and the ledger sync take this, never a stub.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/result.h"
#include "kubelet-bridge/cri.pb.h"

namespace grpc {
class GenericCallbackServerContext;
}

namespace vri {

// Whom a call is made for, and by when: on kubelet's behalf (its deadline,
// metadata and cancellation go upstream with it), or the shim's own call.
struct CallScope {
  std::chrono::system_clock::time_point deadline;
  grpc::GenericCallbackServerContext* kubelet = nullptr;  // set: made for this call of kubelet's
  bool waitForReady = false;  // a peer that is restarting is waited for, within the deadline

  static CallScope within(std::chrono::milliseconds timeout) {
    return CallScope{std::chrono::system_clock::now() + timeout, nullptr, false};
  }
};

class RuntimeClient {
 public:
  virtual ~RuntimeClient() = default;

  // Create.
  virtual Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(
      const CallScope& scope, const runtime::v1::RunPodSandboxRequest& request) = 0;
  virtual Result<runtime::v1::CreateContainerResponse> createContainer(
      const CallScope& scope, const runtime::v1::CreateContainerRequest& request) = 0;
  // Start (the runtime makes the container's cgroup and runs its process).
  virtual Result<void> startContainer(const CallScope& scope, const std::string& containerId) = 0;
  // Update.
  virtual Result<void> updateContainerResources(const CallScope& scope,
                                                const runtime::v1::UpdateContainerResourcesRequest& request) = 0;
  // Stop and remove.
  virtual Result<void> stopPodSandbox(const CallScope& scope, const std::string& sandboxId) = 0;
  virtual Result<void> removePodSandbox(const CallScope& scope, const std::string& sandboxId) = 0;
  virtual Result<void> removeContainer(const CallScope& scope, const std::string& containerId) = 0;
  // List: every sandbox; the containers of one pod (by kubelet's pod UID label), or all with "".
  virtual Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope& scope) = 0;
  virtual Result<std::vector<runtime::v1::Container>> listContainers(const CallScope& scope,
                                                                     const std::string& podUid) = 0;
  // Status (`verbose`: with the config the runtime keeps, in info).
  virtual Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope& scope,
                                                                         const std::string& sandboxId,
                                                                         bool verbose) = 0;
  virtual Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope& scope,
                                                                       const std::string& containerId,
                                                                       bool verbose) = 0;
  // The runtime's own configuration: its cgroup driver (UNIMPLEMENTED before containerd 2.0).
  virtual Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope& scope) = 0;
};

}  // namespace vri
