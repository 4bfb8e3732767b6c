// The gRPC face of the ledger: convert the message, call the ledger, answer.
//
// vrid serves it twice, on a read-only socket anyone may open and on an admin
// socket; gRPC does not tell a service who called, so the read-only instance
// refuses every mutating call itself, with PERMISSION_DENIED.
#pragma once

#include "accounting/ledger.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

enum class SocketAccess { kReadOnly, kAdmin };

class VriService final : public v1::Vri::Service {
 public:
  VriService(Ledger& ledger, SocketAccess access) : ledger_(ledger), access_(access) {}

  grpc::Status GetNode(grpc::ServerContext*, const v1::GetNodeRequest*, v1::Node* reply) override;
  grpc::Status AdmitContainer(grpc::ServerContext*, const v1::AdmitContainerRequest* request,
                              v1::ContainerAllocation* reply) override;
  grpc::Status ReleaseContainer(grpc::ServerContext*, const v1::ReleaseContainerRequest* request,
                                v1::Released*) override;
  grpc::Status ReleasePod(grpc::ServerContext*, const v1::ReleasePodRequest* request, v1::Released*) override;
  grpc::Status AdmitVm(grpc::ServerContext*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  grpc::Status ReleaseVm(grpc::ServerContext*, const v1::ReleaseVmRequest* request, v1::Released*) override;

 private:
  grpc::Status denyOnReadOnly(const char* method) const;

  Ledger& ledger_;
  SocketAccess access_;
};

}  // namespace vri
