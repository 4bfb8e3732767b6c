// The gRPC face of vrid: convert the message, ask the node manager, answer.
// The only place a Result becomes a grpc::Status.
//
// vrid serves it twice, on a read-only socket anyone may open and on an admin
// socket; gRPC does not tell a service who called, so the read-only instance
// refuses every mutating call itself, with PERMISSION_DENIED.
#pragma once

#include "proto/vri.grpc.pb.h"
#include "vri/node_manager.h"

namespace vri {

enum class SocketAccess { kReadOnly, kAdmin };

class VriService final : public v1::Vri::Service {
 public:
  VriService(NodeManager& node, SocketAccess access) : node_(node), access_(access) {}

  using Context = grpc::ServerContext;
  grpc::Status GetNode(Context*, const v1::GetNodeRequest*, v1::Node* reply) override;
  grpc::Status AdmitPod(Context*, const v1::AdmitPodRequest* request, v1::PodAllocation* reply) override;
  grpc::Status AdmitContainer(Context*, const v1::AdmitContainerRequest* request,
                              v1::ContainerAllocation* reply) override;
  grpc::Status ResizeContainer(Context*, const v1::AdmitContainerRequest* request,
                               v1::ContainerAllocation* reply) override;
  grpc::Status ReleaseContainer(Context*, const v1::ReleaseContainerRequest* request, v1::Released*) override;
  grpc::Status ReleasePod(Context*, const v1::ReleasePodRequest* request, v1::Released*) override;
  grpc::Status AdmitVm(Context*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  grpc::Status ReserveVm(Context*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  grpc::Status ResizeVm(Context*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  grpc::Status VmStarted(Context*, const v1::VmStartedRequest* request, v1::VmStartedReply* reply) override;
  grpc::Status ReleaseVm(Context*, const v1::ReleaseVmRequest* request, v1::Released*) override;
  grpc::Status ListTenants(Context*, const v1::ListTenantsRequest* request, v1::TenantList* reply) override;
  grpc::Status GetTenant(Context*, const v1::GetTenantRequest* request, v1::Tenant* reply) override;
  grpc::Status Watch(Context* context, const v1::WatchRequest*, grpc::ServerWriter<v1::Event>* writer) override;
  grpc::Status Reconcile(Context*, const v1::ReconcileRequest* request, v1::ReconcileReply* reply) override;

 private:
  grpc::Status denyOnReadOnly(const char* method) const;
  grpc::Status vmDecision(const char* method, const v1::AdmitVmRequest& request, v1::VmAllocation& reply,
                          Result<VmCpuPlacement> (NodeManager::*decide)(const VmSpec&));

  NodeManager& node_;
  SocketAccess access_;
};

}  // namespace vri
