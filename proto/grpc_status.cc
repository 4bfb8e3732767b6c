#include "proto/grpc_status.h"

#include <array>
#include <utility>

namespace vri {

namespace {

constexpr std::array<std::pair<ErrorCode, grpc::StatusCode>, 16> kCodes = {{
    {ErrorCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
    {ErrorCode::kNotFound, grpc::StatusCode::NOT_FOUND},
    {ErrorCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
    {ErrorCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
    {ErrorCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
    {ErrorCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
    {ErrorCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
    {ErrorCode::kInternal, grpc::StatusCode::INTERNAL},
    {ErrorCode::kCancelled, grpc::StatusCode::CANCELLED},
    {ErrorCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
    {ErrorCode::kAborted, grpc::StatusCode::ABORTED},
    {ErrorCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
    {ErrorCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
    {ErrorCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
    {ErrorCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
    {ErrorCode::kUnknown, grpc::StatusCode::UNKNOWN},
}};

}  // namespace

grpc::Status toGrpcStatus(const Error& error) {
  for (const auto& [ours, theirs] : kCodes) {
    if (ours == error.code()) return grpc::Status(theirs, error.message());
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, error.message());
}

Error fromGrpcStatus(const grpc::Status& status) {
  for (const auto& [ours, theirs] : kCodes) {
    if (theirs == status.error_code()) return Error(ours, status.error_message());
  }
  return Error(ErrorCode::kUnknown, status.error_message());
}

}  // namespace vri
