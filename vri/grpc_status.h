// The one place where VRI's errors become gRPC statuses.
#pragma once

#include <grpcpp/support/status.h>

#include "cgroup-model/result.h"

namespace vri {

grpc::Status toGrpcStatus(const Error& error);

}  // namespace vri
