// HookVrid: vrid as the hook logic calls it, one Result per call. An error
// coded kUnavailable or kDeadlineExceeded means vrid did not decide (it is
// gone, too slow, or shutting down); any other is vrid's answer.
//
// Inside vrid the hook logic calls the admin service directly (vri/hook_door.h);
// vri-hook-offline answers with UnreachableHookVrid when the hook could not reach
// vrid; tests bring their own where they need a vrid that misbehaves.
#pragma once

#include <string>

#include "base/result.h"
#include "proto/vri.pb.h"

namespace vri {

class HookVrid {
 public:
  virtual ~HookVrid() = default;
  virtual Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest& request) = 0;
  virtual Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest& request) = 0;
  virtual Result<void> releaseVm(const v1::ReleaseVmRequest& request) = 0;
  // How the hook's message names a call that came back unavailable (vridUnreachable): over a socket
  // that is vrid gone or hung; vrid's own decisions answered that they cannot be taken now (its state
  // filesystem full, systemd not answering in time, a halt), which sends an operator elsewhere.
  virtual std::string unavailableMeans() const { return "did not answer"; }
};

// Whether an error means vrid did not answer (rather than answered no).
inline bool vridUnreachable(const Error& error) {
  return error.code() == ErrorCode::kUnavailable || error.code() == ErrorCode::kDeadlineExceeded;
}

// A vrid that could not be reached, for the reason vri-hook found (every call answers kUnavailable with it).
class UnreachableHookVrid final : public HookVrid {
 public:
  explicit UnreachableHookVrid(std::string reason) : reason_(std::move(reason)) {}
  Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest&) override { return gone(); }
  Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest&) override { return gone(); }
  Result<void> releaseVm(const v1::ReleaseVmRequest&) override { return gone(); }

 private:
  Error gone() const { return Error(ErrorCode::kUnavailable, reason_); }
  std::string reason_;
};

}  // namespace vri
