#include "base/result.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace vri {
namespace {

Result<int> half(int n) {
  if (n % 2 != 0) return Error::invalidArgument(std::to_string(n) + " is odd");
  return n / 2;
}

Result<int> quarter(int n) {
  VRI_ASSIGN_OR_RETURN(int h, half(n));
  VRI_ASSIGN_OR_RETURN(int q, half(h).context("halve " + std::to_string(h)));
  return q;
}

Result<void> requireEven(int n) {
  VRI_TRY(half(n));
  return {};
}

TEST(ResultTest, CarriesValueOrError) {
  auto ok = half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  auto bad = half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "3 is odd");
}

TEST(ResultTest, PropagatesWithContextChain) {
  EXPECT_EQ(*quarter(8), 2);
  auto bad = quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "halve 3: 3 is odd");
  auto outer = std::move(bad).context("plan pod p1");
  EXPECT_EQ(outer.error().message(), "plan pod p1: halve 3: 3 is odd");
  EXPECT_EQ(outer.error().code(), ErrorCode::kInvalidArgument);
}

TEST(ResultTest, VoidResults) {
  EXPECT_TRUE(requireEven(2).ok());
  auto bad = requireEven(5);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(std::move(bad).context("check").error().toString(), "INVALID_ARGUMENT: check: 5 is odd");
}

TEST(ResultTest, ErrnoErrorsKeepErrnoAndMapCodes) {
  const Error missing = Error::fromErrno(ENOENT, "open cpuset.cpus of kubepods");
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.sysErrno(), ENOENT);
  EXPECT_EQ(missing.message(), "open cpuset.cpus of kubepods: No such file or directory");
  EXPECT_EQ(Error::fromErrno(EBUSY, "rmdir").code(), ErrorCode::kFailedPrecondition);
  EXPECT_EQ(Error::fromErrno(EINVAL, "write").code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(Error::fromErrno(EACCES, "write").code(), ErrorCode::kPermissionDenied);
}

}  // namespace
}  // namespace vri
