#include "kubelet-bridge/grpc_vrid_client.h"

#include <grpcpp/client_context.h>

#include "base/thread_annotations.h"
#include "proto/grpc_status.h"

namespace vri {

namespace {

std::unique_ptr<grpc::ClientContext> contextFor(const CallScope& scope) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(scope.deadline);
  if (scope.waitForReady) context->set_wait_for_ready(true);
  return context;
}

// One unary call: its reply, or vrid's refusal with its code.
template <typename Reply, typename Request, typename Method>
Result<Reply> unary(v1::Vri::Stub& stub, const CallScope& scope, Method method, const Request& request) {
  Reply reply;
  const auto context = contextFor(scope);
  const grpc::Status status = (stub.*method)(context.get(), request, &reply);
  if (!status.ok()) return fromGrpcStatus(status);
  return reply;
}

class GrpcEventStream final : public EventStream {
 public:
  explicit GrpcEventStream(v1::Vri::Stub& stub) : reader_(stub.Watch(&context_, v1::WatchRequest())) {}
  bool next(v1::Event& event) override { return reader_->Read(&event); }
  Error finish() override {
    const grpc::Status status = reader_->Finish();
    return status.ok() ? Error(ErrorCode::kUnavailable, "the stream ended") : fromGrpcStatus(status);
  }
  void cancel() override { context_.TryCancel(); }

 private:
  grpc::ClientContext context_;  // before the reader: the reader uses it
  std::unique_ptr<grpc::ClientReader<v1::Event>> reader_;
};

}  // namespace

Result<v1::PodAllocation> GrpcVridClient::admitPod(const CallScope& scope, const v1::AdmitPodRequest& request) {
  return unary<v1::PodAllocation>(*stub_, scope, &v1::Vri::Stub::AdmitPod, request);
}

Result<v1::ContainerAllocation> GrpcVridClient::admitContainer(const CallScope& scope,
                                                               const v1::AdmitContainerRequest& request) {
  return unary<v1::ContainerAllocation>(*stub_, scope, &v1::Vri::Stub::AdmitContainer, request);
}

Result<v1::ContainerAllocation> GrpcVridClient::resizeContainer(const CallScope& scope,
                                                                const v1::AdmitContainerRequest& request) {
  return unary<v1::ContainerAllocation>(*stub_, scope, &v1::Vri::Stub::ResizeContainer, request);
}

Result<bool> GrpcVridClient::releasePod(const CallScope& scope, const v1::ReleasePodRequest& request) {
  VRI_ASSIGN_OR_RETURN(auto released, unary<v1::Released>(*stub_, scope, &v1::Vri::Stub::ReleasePod, request));
  return released.released();
}

Result<bool> GrpcVridClient::releaseContainer(const CallScope& scope, const v1::ReleaseContainerRequest& request) {
  VRI_ASSIGN_OR_RETURN(auto released, unary<v1::Released>(*stub_, scope, &v1::Vri::Stub::ReleaseContainer, request));
  return released.released();
}

Result<v1::ContainerStartedReply> GrpcVridClient::containerStarted(const CallScope& scope,
                                                                   const std::string& containerId) {
  v1::ContainerStartedRequest request;
  request.set_container_id(containerId);
  return unary<v1::ContainerStartedReply>(*stub_, scope, &v1::Vri::Stub::ContainerStarted, request);
}

Result<v1::TenantList> GrpcVridClient::listPods(const CallScope& scope) {
  v1::ListTenantsRequest request;
  request.set_kind(v1::ListTenantsRequest::PODS);
  return unary<v1::TenantList>(*stub_, scope, &v1::Vri::Stub::ListTenants, request);
}

Result<v1::Tenant> GrpcVridClient::getPod(const CallScope& scope, const std::string& podUid) {
  v1::GetTenantRequest request;
  request.set_pod_uid(podUid);
  return unary<v1::Tenant>(*stub_, scope, &v1::Vri::Stub::GetTenant, request);
}

Result<v1::Node> GrpcVridClient::node(const CallScope& scope) {
  return unary<v1::Node>(*stub_, scope, &v1::Vri::Stub::GetNode, v1::GetNodeRequest());
}

std::unique_ptr<EventStream> GrpcVridClient::watch() { return std::make_unique<GrpcEventStream>(*stub_); }

}  // namespace vri
