#include "proto/grpc_status.h"

#include "base/rpc_code.h"

namespace vri {

// gRPC's status codes are the canonical RPC codes (base/rpc_code.h), number for number.
grpc::Status toGrpcStatus(const Error& error) {
  return grpc::Status(static_cast<grpc::StatusCode>(toRpcCode(error.code())), error.message());
}

Error fromGrpcStatus(const grpc::Status& status) {
  return fromRpcCode(static_cast<int32_t>(status.error_code()), status.error_message());
}

}  // namespace vri
