// HookVrid: vrid as vri-hook calls it, one Result per call, each within the
// hook's deadline. An error coded kUnavailable or kDeadlineExceeded means vrid
// did not answer in time; any other is vrid's answer. GrpcHookVrid is vrid's
// gRPC API; tests bring their own where they need a vrid that misbehaves.
#pragma once

#include <chrono>

#include "base/result.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

class HookVrid {
 public:
  virtual ~HookVrid() = default;
  virtual Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest& request) = 0;
  virtual Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest& request) = 0;
  virtual Result<void> releaseVm(const v1::ReleaseVmRequest& request) = 0;
};

// Whether an error means vrid did not answer (rather than answered no).
inline bool vridUnreachable(const Error& error) {
  return error.code() == ErrorCode::kUnavailable || error.code() == ErrorCode::kDeadlineExceeded;
}

class GrpcHookVrid final : public HookVrid {
 public:
  // `stub` outlives this; every call is given `timeout`.
  GrpcHookVrid(v1::Vri::StubInterface& stub, std::chrono::milliseconds timeout) : stub_(stub), timeout_(timeout) {}
  Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest& request) override;
  Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest& request) override;
  Result<void> releaseVm(const v1::ReleaseVmRequest& request) override;

 private:
  v1::Vri::StubInterface& stub_;
  std::chrono::milliseconds timeout_;
};

}  // namespace vri
