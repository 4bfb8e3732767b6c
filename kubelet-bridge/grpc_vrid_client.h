// GrpcVridClient: VridClient over vrid's gRPC API (proto/vri.proto).
#pragma once

#include <grpcpp/channel.h>

#include <memory>

#include "kubelet-bridge/vrid_client.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

class GrpcVridClient final : public VridClient {
 public:
  explicit GrpcVridClient(std::shared_ptr<grpc::Channel> vrid) : stub_(v1::Vri::NewStub(std::move(vrid))) {}

  Result<v1::PodAllocation> admitPod(const CallScope& scope, const v1::AdmitPodRequest& request) override;
  Result<v1::ContainerAllocation> admitContainer(const CallScope& scope,
                                                 const v1::AdmitContainerRequest& request) override;
  Result<v1::ContainerAllocation> resizeContainer(const CallScope& scope,
                                                  const v1::AdmitContainerRequest& request) override;
  Result<bool> releasePod(const CallScope& scope, const v1::ReleasePodRequest& request) override;
  Result<bool> releaseContainer(const CallScope& scope, const v1::ReleaseContainerRequest& request) override;
  Result<v1::ContainerStartedReply> containerStarted(const CallScope& scope, const std::string& containerId) override;
  Result<v1::TenantList> listPods(const CallScope& scope) override;
  Result<v1::Tenant> getPod(const CallScope& scope, const std::string& podUid) override;
  Result<v1::Node> node(const CallScope& scope) override;
  std::unique_ptr<EventStream> watch() override;

 private:
  std::unique_ptr<v1::Vri::Stub> stub_;
};

}  // namespace vri
