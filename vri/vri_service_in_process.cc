// VriService's calls for callers inside vrid (the hook socket, vri/hook_door.h): the same
// decisions as the gRPC calls of the same name, on the same decision thread, recorded, counted and
// logged alike.
#include <future>

#include "proto/grpc_status.h"
#include "vri/vri_service.h"

namespace vri {

Result<void> VriService::decideFor(const char* method, const std::string& agent, std::function<Result<void>()> call) {
  const auto started = std::chrono::steady_clock::now();
  VRI_TRY(checkAdmin(method));
  clients_.record(agent);
  const auto finished = [&](const Result<void>& outcome) {
    const grpc::Status status = outcome.ok() ? grpc::Status::OK : toGrpcStatus(outcome.error());
    if (!status.ok()) {
      refusals_.write(std::string(method) + " refused on the hook socket: " +
                      std::string(grpcCodeName(status.error_code())) + ": " + status.error_message());
    }
    account(method, agent, Runs::kDecides, status, started);
  };
  if (!gate_.enter()) {
    Result<void> closing = Error(ErrorCode::kUnavailable, "vrid is shutting down");
    finished(closing);
    return closing;
  }
  std::promise<Result<void>> decided;
  decisions_->post([&decided, &call] { decided.set_value(call()); });
  Result<void> outcome = decided.get_future().get();
  finished(outcome);
  gate_.leave();
  return outcome;
}

Result<v1::VmAllocation> VriService::admitVmFor(const std::string& agent, const v1::AdmitVmRequest& request) {
  v1::VmAllocation reply;
  VRI_TRY(decideFor("AdmitVm", agent, [&] { return admitVm(request, reply); }));
  return reply;
}

Result<v1::VmStartedReply> VriService::vmStartedFor(const std::string& agent, const v1::VmStartedRequest& request) {
  v1::VmStartedReply reply;
  VRI_TRY(decideFor("VmStarted", agent, [&] { return vmStarted(request, reply); }));
  return reply;
}

Result<void> VriService::releaseVmFor(const std::string& agent, const v1::ReleaseVmRequest& request) {
  v1::Released reply;
  return decideFor("ReleaseVm", agent, [&] { return releaseVm(request, reply); });
}

}  // namespace vri
