#include "kubelet-bridge/grpc_runtime_client.h"

#include "kubelet-bridge/upstream_call.h"
#include "proto/grpc_status.h"

namespace vri {

namespace {

constexpr char kPodUidLabel[] = "io.kubernetes.pod.uid";  // kubelet labels every container with its pod

std::unique_ptr<grpc::ClientContext> contextFor(const CallScope& scope) {
  std::unique_ptr<grpc::ClientContext> context;
  if (scope.kubelet != nullptr) {
    context = upstreamContext(*scope.kubelet);
  } else {
    context = std::make_unique<grpc::ClientContext>();
  }
  context->set_deadline(scope.deadline);
  if (scope.waitForReady) context->set_wait_for_ready(true);
  return context;
}

}  // namespace

template <typename Reply>
Result<Reply> GrpcRuntimeClient::call(const CallScope& scope, const char* method,
                                      const google::protobuf::MessageLite& request) {
  Reply reply;
  const auto context = contextFor(scope);
  const grpc::Status status =
      callUpstream(stub_, *context, std::string("/runtime.v1.RuntimeService/") + method, request, &reply);
  if (!status.ok()) return fromGrpcStatus(status);
  return reply;
}

Result<runtime::v1::RunPodSandboxResponse> GrpcRuntimeClient::runPodSandbox(
    const CallScope& scope, const runtime::v1::RunPodSandboxRequest& request) {
  return call<runtime::v1::RunPodSandboxResponse>(scope, "RunPodSandbox", request);
}

Result<runtime::v1::CreateContainerResponse> GrpcRuntimeClient::createContainer(
    const CallScope& scope, const runtime::v1::CreateContainerRequest& request) {
  return call<runtime::v1::CreateContainerResponse>(scope, "CreateContainer", request);
}

Result<void> GrpcRuntimeClient::updateContainerResources(const CallScope& scope,
                                                         const runtime::v1::UpdateContainerResourcesRequest& request) {
  VRI_TRY(call<runtime::v1::UpdateContainerResourcesResponse>(scope, "UpdateContainerResources", request));
  return {};
}

Result<void> GrpcRuntimeClient::stopPodSandbox(const CallScope& scope, const std::string& sandboxId) {
  runtime::v1::StopPodSandboxRequest request;
  request.set_pod_sandbox_id(sandboxId);
  VRI_TRY(call<runtime::v1::StopPodSandboxResponse>(scope, "StopPodSandbox", request));
  return {};
}

Result<void> GrpcRuntimeClient::removePodSandbox(const CallScope& scope, const std::string& sandboxId) {
  runtime::v1::RemovePodSandboxRequest request;
  request.set_pod_sandbox_id(sandboxId);
  VRI_TRY(call<runtime::v1::RemovePodSandboxResponse>(scope, "RemovePodSandbox", request));
  return {};
}

Result<void> GrpcRuntimeClient::removeContainer(const CallScope& scope, const std::string& containerId) {
  runtime::v1::RemoveContainerRequest request;
  request.set_container_id(containerId);
  VRI_TRY(call<runtime::v1::RemoveContainerResponse>(scope, "RemoveContainer", request));
  return {};
}

Result<void> GrpcRuntimeClient::startContainer(const CallScope& scope, const std::string& containerId) {
  runtime::v1::StartContainerRequest request;
  request.set_container_id(containerId);
  VRI_TRY(call<runtime::v1::StartContainerResponse>(scope, "StartContainer", request));
  return {};
}

Result<std::vector<runtime::v1::PodSandbox>> GrpcRuntimeClient::listPodSandboxes(const CallScope& scope) {
  VRI_ASSIGN_OR_RETURN(auto listed, call<runtime::v1::ListPodSandboxResponse>(scope, "ListPodSandbox",
                                                                              runtime::v1::ListPodSandboxRequest()));
  return std::vector<runtime::v1::PodSandbox>(listed.items().begin(), listed.items().end());
}

Result<std::vector<runtime::v1::Container>> GrpcRuntimeClient::listContainers(const CallScope& scope,
                                                                              const std::string& podUid) {
  runtime::v1::ListContainersRequest request;
  if (!podUid.empty()) (*request.mutable_filter()->mutable_label_selector())[kPodUidLabel] = podUid;
  VRI_ASSIGN_OR_RETURN(auto listed, call<runtime::v1::ListContainersResponse>(scope, "ListContainers", request));
  return std::vector<runtime::v1::Container>(listed.containers().begin(), listed.containers().end());
}

Result<runtime::v1::PodSandboxStatusResponse> GrpcRuntimeClient::podSandboxStatus(const CallScope& scope,
                                                                                  const std::string& sandboxId,
                                                                                  bool verbose) {
  runtime::v1::PodSandboxStatusRequest request;
  request.set_pod_sandbox_id(sandboxId);
  request.set_verbose(verbose);
  return call<runtime::v1::PodSandboxStatusResponse>(scope, "PodSandboxStatus", request);
}

Result<runtime::v1::ContainerStatusResponse> GrpcRuntimeClient::containerStatus(const CallScope& scope,
                                                                                const std::string& containerId,
                                                                                bool verbose) {
  runtime::v1::ContainerStatusRequest request;
  request.set_container_id(containerId);
  request.set_verbose(verbose);
  return call<runtime::v1::ContainerStatusResponse>(scope, "ContainerStatus", request);
}

Result<runtime::v1::RuntimeConfigResponse> GrpcRuntimeClient::runtimeConfig(const CallScope& scope) {
  return call<runtime::v1::RuntimeConfigResponse>(scope, "RuntimeConfig", runtime::v1::RuntimeConfigRequest());
}

}  // namespace vri
