// What kubelet is told when vrid does not place a pod or container, by the CRI shim and the NRI
// plugin alike: vrid's refusal as it is ("vri: <reason>", with vrid's code), or, when vrid did not
// answer, UNAVAILABLE saying that nothing was created; input the kubelet side cannot read is
// INVALID_ARGUMENT. `speaker` begins the messages that are the kubelet side's own ("vri-cri-shim",
// "vri").
#pragma once

#include <string>

#include "base/result.h"

namespace vri {

inline Error refusalFromVrid(const std::string& speaker, const std::string& what, const Error& error) {
  const bool unreachable = error.code() == ErrorCode::kUnavailable || error.code() == ErrorCode::kDeadlineExceeded;
  if (unreachable) {
    return Error(ErrorCode::kUnavailable, speaker + ": vrid did not answer " + what + " (" + error.message() +
                                              "); pods and containers are created only with vrid's allocation");
  }
  return Error(error.code(), "vri: " + error.message());
}

inline Error unreadableRequest(const std::string& speaker, const Error& error) {
  return Error::invalidArgument(speaker + ": " + error.message());
}

}  // namespace vri
