#include "cgroup-model/cgroup_values.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vri {
namespace {

TEST(CgroupValuesTest, SharesToWeightKeepsTheDefaultsAligned) {
  EXPECT_EQ(sharesToWeight({2}).value, 1u);
  EXPECT_EQ(sharesToWeight({1024}).value, 100u);
  EXPECT_EQ(sharesToWeight({262144}).value, 10000u);
  EXPECT_EQ(sharesToWeight({102}).value, 17u);
  // The older linear mapping put the default far below v2's default of 100.
  EXPECT_EQ(sharesToWeightLinear({1024}).value, 39u);
  EXPECT_EQ(weightToShares({100}).value, 1024u);
  EXPECT_EQ(weightToShares({1}).value, 2u);
  EXPECT_EQ(weightToShares({10000}).value, 262144u);
}

TEST(CgroupValuesTest, WeightRoundTripsThroughShares) {
  for (uint64_t weight = 1; weight <= 10000; weight += 7) {
    const CpuWeight back = sharesToWeight(weightToShares({weight}));
    EXPECT_LE(std::abs(static_cast<double>(back.value) - static_cast<double>(weight)), 0.02 * weight + 1) << weight;
  }
  uint64_t previous = 0;
  for (uint64_t shares = 2; shares <= 262144; shares *= 2) {
    const uint64_t weight = sharesToWeight({shares}).value;
    EXPECT_GE(weight, previous);  // monotonic
    previous = weight;
  }
}

TEST(CgroupValuesTest, CpuMaxInBothVersions) {
  auto unlimited = CpuMax::parseV2("max 100000");
  ASSERT_TRUE(unlimited.ok());
  EXPECT_FALSE(unlimited->quotaUs.has_value());
  EXPECT_EQ(unlimited->formatV1Quota(), "-1");
  auto half = CpuMax::parseV1("50000", "100000");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->formatV2(), "50000 100000");
  EXPECT_EQ(*CpuMax::parseV2("50000 100000"), *half);
  EXPECT_FALSE(CpuMax::parseV2("999 100000").ok());
  EXPECT_FALSE(CpuMax::parseV2("max 100").ok());
  EXPECT_FALSE(CpuMax::parseV2("max  100000").ok());
  EXPECT_FALSE(CpuMax::parseV1("-2", "100000").ok());
  EXPECT_FALSE(CpuShares::parse("1").ok());
  EXPECT_FALSE(CpuWeight::parse("10001").ok());
}

TEST(CgroupValuesTest, LimitsInBothVersions) {
  EXPECT_FALSE(Limit::parseV2("max")->value.has_value());
  EXPECT_EQ(*Limit::parseV2("1073741824")->value, 1073741824u);
  EXPECT_FALSE(Limit::parseV1Memory("9223372036854771712")->value.has_value());
  EXPECT_FALSE(Limit::parseV1Memory("-1")->value.has_value());
  EXPECT_EQ(Limit{}.formatV1Memory(), "-1");
  EXPECT_EQ(Limit{4096}.formatV2(), "4096");
  EXPECT_FALSE(Limit::parseV2("-5").ok());
  EXPECT_FALSE(Limit::parseV2("12k").ok());
}

TEST(CgroupValuesTest, KubeletConversions) {
  EXPECT_EQ(milliCpuToShares(0).value, 2u);
  EXPECT_EQ(milliCpuToShares(1).value, 2u);
  EXPECT_EQ(milliCpuToShares(100).value, 102u);
  EXPECT_EQ(milliCpuToShares(1000).value, 1024u);
  EXPECT_EQ(milliCpuToShares(500000).value, 262144u);
  EXPECT_EQ(milliCpuToQuota(0, 100000), std::nullopt);
  EXPECT_EQ(milliCpuToQuota(5, 100000), 1000);  // kubelet's minimum quota
  EXPECT_EQ(milliCpuToQuota(1500, 100000), 150000);
  EXPECT_EQ(hugepageSizeName(2 << 20), "2MB");
  EXPECT_EQ(hugepageSizeName(1ULL << 30), "1GB");
  EXPECT_EQ(hugepageSizeName(64 << 10), "64KB");
}

}  // namespace
}  // namespace vri

namespace vri {
namespace {

// A container adopted from its cgroup keeps the request kubelet gave it: 7 shares are 7m, never 6m.
TEST(CgroupValuesTest, SharesTurnBackIntoTheMilliCpuTheyCameFrom) {
  for (int64_t milli = 3; milli <= 256000; ++milli)
    ASSERT_EQ(milliCpuFromShares(milliCpuToShares(milli)), milli) << milli;
  EXPECT_EQ(milliCpuFromShares(CpuShares{7}), 7);
  EXPECT_EQ(milliCpuFromShares(CpuShares{2}), 0);  // BestEffort: no request
  EXPECT_EQ(milliCpuFromShares(CpuShares{1}), 0);
}

}  // namespace
}  // namespace vri
