#include "libvirt-bridge/hook_vrid.h"

#include <grpcpp/grpcpp.h>

#include "proto/grpc_status.h"

namespace vri {

namespace {

// One unary call with the deadline, its status made an Error at this edge.
template <typename Request, typename Reply, typename Call>
Result<Reply> call(std::chrono::milliseconds timeout, const Request& request, Call unary) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  Reply reply;
  const grpc::Status status = unary(&context, request, &reply);
  if (!status.ok()) return fromGrpcStatus(status);
  return reply;
}

}  // namespace

Result<v1::VmAllocation> GrpcHookVrid::admitVm(const v1::AdmitVmRequest& request) {
  return call<v1::AdmitVmRequest, v1::VmAllocation>(
      timeout_, request, [this](auto* c, const auto& r, auto* out) { return stub_.AdmitVm(c, r, out); });
}

Result<v1::VmStartedReply> GrpcHookVrid::vmStarted(const v1::VmStartedRequest& request) {
  return call<v1::VmStartedRequest, v1::VmStartedReply>(
      timeout_, request, [this](auto* c, const auto& r, auto* out) { return stub_.VmStarted(c, r, out); });
}

Result<void> GrpcHookVrid::releaseVm(const v1::ReleaseVmRequest& request) {
  auto released = call<v1::ReleaseVmRequest, v1::Released>(
      timeout_, request, [this](auto* c, const auto& r, auto* out) { return stub_.ReleaseVm(c, r, out); });
  if (!released.ok()) return released.error();
  return {};
}

}  // namespace vri
