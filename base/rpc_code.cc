#include "base/rpc_code.h"

#include <array>
#include <utility>

namespace vri {

namespace {

// google.rpc.Code (google/rpc/code.proto): every code has its ErrorCode, so a status that comes in
// and goes out again keeps its code.
constexpr std::array<std::pair<ErrorCode, int32_t>, 16> kCodes = {{
    {ErrorCode::kCancelled, 1},
    {ErrorCode::kUnknown, 2},
    {ErrorCode::kInvalidArgument, 3},
    {ErrorCode::kDeadlineExceeded, 4},
    {ErrorCode::kNotFound, 5},
    {ErrorCode::kAlreadyExists, 6},
    {ErrorCode::kPermissionDenied, 7},
    {ErrorCode::kResourceExhausted, 8},
    {ErrorCode::kFailedPrecondition, 9},
    {ErrorCode::kAborted, 10},
    {ErrorCode::kOutOfRange, 11},
    {ErrorCode::kUnimplemented, 12},
    {ErrorCode::kInternal, 13},
    {ErrorCode::kUnavailable, 14},
    {ErrorCode::kDataLoss, 15},
    {ErrorCode::kUnauthenticated, 16},
}};

constexpr int32_t kInternal = 13;

}  // namespace

int32_t toRpcCode(ErrorCode code) {
  for (const auto& [ours, number] : kCodes) {
    if (ours == code) return number;
  }
  return kInternal;
}

Error fromRpcCode(int32_t code, std::string message) {
  for (const auto& [ours, number] : kCodes) {
    if (number == code) return Error(ours, std::move(message));
  }
  return Error(ErrorCode::kUnknown, std::move(message));
}

}  // namespace vri
