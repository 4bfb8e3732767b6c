// GrpcRuntimeClient: RuntimeClient over CRI's RuntimeService (containerd's
// endpoint), raw bytes through a generic stub, as the proxy itself forwards.
// A call made for kubelet carries kubelet's deadline, metadata and
// cancellation (upstream_call.h); the runtime's answer keeps its code.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include <memory>

#include "kubelet-bridge/runtime_client.h"

namespace vri {

class GrpcRuntimeClient final : public RuntimeClient {
 public:
  explicit GrpcRuntimeClient(std::shared_ptr<grpc::Channel> runtime) : stub_(std::move(runtime)) {}

  Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(const CallScope& scope,
                                                           const runtime::v1::RunPodSandboxRequest& request) override;
  Result<runtime::v1::CreateContainerResponse> createContainer(
      const CallScope& scope, const runtime::v1::CreateContainerRequest& request) override;
  Result<void> updateContainerResources(const CallScope& scope,
                                        const runtime::v1::UpdateContainerResourcesRequest& request) override;
  Result<void> stopPodSandbox(const CallScope& scope, const std::string& sandboxId) override;
  Result<void> removePodSandbox(const CallScope& scope, const std::string& sandboxId) override;
  Result<void> removeContainer(const CallScope& scope, const std::string& containerId) override;
  Result<void> startContainer(const CallScope& scope, const std::string& containerId) override;
  Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope& scope) override;
  Result<std::vector<runtime::v1::Container>> listContainers(const CallScope& scope,
                                                             const std::string& podUid) override;
  Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope& scope, const std::string& sandboxId,
                                                                 bool verbose) override;
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope& scope, const std::string& containerId,
                                                               bool verbose) override;
  Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope& scope) override;

 private:
  template <typename Reply>
  Result<Reply> call(const CallScope& scope, const char* method, const google::protobuf::MessageLite& request);

  grpc::GenericStub stub_;
};

}  // namespace vri
