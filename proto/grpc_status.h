// The one place where VRI's errors and gRPC statuses turn into each other:
// at the edge, when vrid answers a call, and when a client (the CRI shim)
// reads a peer's answer. Every gRPC code has its ErrorCode, so a status that
// comes in and goes out again keeps its code.
#pragma once

#include <grpcpp/support/status.h>

#include "base/result.h"

namespace vri {

grpc::Status toGrpcStatus(const Error& error);
// Not for OK: the caller checks that first.
Error fromGrpcStatus(const grpc::Status& status);

}  // namespace vri
