#include "proto/grpc_status.h"

#include <gtest/gtest.h>

namespace vri {
namespace {

// gRPC's codes, by name, for each of VRI's: the numbers base/rpc_code.h uses are gRPC's own.
TEST(GrpcStatusTest, EachErrorCodeIsGrpcsCodeOfTheSameName) {
  const std::pair<ErrorCode, grpc::StatusCode> pairs[] = {
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
  };
  for (const auto& [ours, theirs] : pairs) {
    const grpc::Status status = toGrpcStatus(Error(ours, "why"));
    EXPECT_EQ(status.error_code(), theirs) << errorCodeName(ours);
    EXPECT_EQ(status.error_message(), "why");
    EXPECT_EQ(fromGrpcStatus(status).code(), ours) << errorCodeName(ours);
  }
}

}  // namespace
}  // namespace vri
