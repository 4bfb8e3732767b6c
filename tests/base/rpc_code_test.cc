#include "base/rpc_code.h"

#include <gtest/gtest.h>

namespace vri {
namespace {

constexpr ErrorCode kEveryCode[] = {
    ErrorCode::kInvalidArgument,
    ErrorCode::kNotFound,
    ErrorCode::kAlreadyExists,
    ErrorCode::kResourceExhausted,
    ErrorCode::kFailedPrecondition,
    ErrorCode::kPermissionDenied,
    ErrorCode::kUnavailable,
    ErrorCode::kInternal,
    ErrorCode::kCancelled,
    ErrorCode::kDeadlineExceeded,
    ErrorCode::kAborted,
    ErrorCode::kOutOfRange,
    ErrorCode::kUnimplemented,
    ErrorCode::kDataLoss,
    ErrorCode::kUnauthenticated,
    ErrorCode::kUnknown,
};

TEST(RpcCodeTest, EveryCodeComesBackAsItWent) {
  for (ErrorCode code : kEveryCode) {
    const Error back = fromRpcCode(toRpcCode(code), "why");
    EXPECT_EQ(back.code(), code) << errorCodeName(code);
    EXPECT_EQ(back.message(), "why");
  }
}

TEST(RpcCodeTest, NumbersAreGoogleRpcCodes) {
  EXPECT_EQ(toRpcCode(ErrorCode::kCancelled), 1);
  EXPECT_EQ(toRpcCode(ErrorCode::kInvalidArgument), 3);
  EXPECT_EQ(toRpcCode(ErrorCode::kDeadlineExceeded), 4);
  EXPECT_EQ(toRpcCode(ErrorCode::kNotFound), 5);
  EXPECT_EQ(toRpcCode(ErrorCode::kResourceExhausted), 8);
  EXPECT_EQ(toRpcCode(ErrorCode::kFailedPrecondition), 9);
  EXPECT_EQ(toRpcCode(ErrorCode::kUnimplemented), 12);
  EXPECT_EQ(toRpcCode(ErrorCode::kInternal), 13);
  EXPECT_EQ(toRpcCode(ErrorCode::kUnavailable), 14);
  EXPECT_EQ(toRpcCode(ErrorCode::kUnauthenticated), 16);
}

TEST(RpcCodeTest, AnUnknownNumberIsUnknown) {
  EXPECT_EQ(fromRpcCode(17, "new").code(), ErrorCode::kUnknown);
  EXPECT_EQ(fromRpcCode(-1, "odd").code(), ErrorCode::kUnknown);
}

}  // namespace
}  // namespace vri
