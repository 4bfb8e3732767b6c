#include "base/quantity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(QuantityTest, ParsesKubernetesValues) {
  struct Case {
    const char* input;
    int64_t milli;
    const char* canonical;
  };
  constexpr int64_t kMi = 1024 * 1024;
  const Case cases[] = {
      {"500m", 500, "500m"},
      {"2", 2000, "2"},
      {"0", 0, "0"},
      {"0.5", 500, "500m"},
      {".5", 500, "500m"},
      {"+2", 2000, "2"},
      {"1.5", 1500, "1500m"},
      {"128Mi", 128 * kMi * 1000, "128Mi"},
      {"1Gi", 1024 * kMi * 1000, "1Gi"},
      {"1024Mi", 1024 * kMi * 1000, "1Gi"},
      {"1.5Ki", 1536 * 1000, "1536"},
      {"1k", 1000 * 1000, "1k"},
      {"2000", 2000 * 1000, "2k"},
      {"1M", 1000 * 1000 * 1000, "1M"},
      {"1e3", 1000 * 1000, "1e3"},
      {"1E3", 1000 * 1000, "1e3"},
      {"1E-2", 10, "10m"},
      {"1n", 1, "1m"},  // rounds up to one milli-unit, as Kubernetes' MilliValue
      {"1u", 1, "1m"},
      {"1500u", 2, "2m"},
  };
  for (const Case& c : cases) {
    auto q = Quantity::parse(c.input);
    ASSERT_TRUE(q.ok()) << c.input << ": " << q.error().message();
    EXPECT_EQ(q->milliValue(), c.milli) << c.input;
    EXPECT_EQ(q->toString(), c.canonical) << c.input;
  }
}

TEST(QuantityTest, ValueRoundsUp) {
  EXPECT_EQ(Quantity::parse("1500m")->value(), 2);
  EXPECT_EQ(Quantity::parse("2")->value(), 2);
  EXPECT_EQ(Quantity::parse("1m")->value(), 1);
  EXPECT_EQ(Quantity::parse("0")->value(), 0);
  EXPECT_EQ(Quantity::parse("8Pi")->value(), int64_t{8} << 50);
}

TEST(QuantityTest, RejectsMalformedInputQuotingIt) {
  struct Case {
    const char* input;
    const char* why;
  };
  const Case cases[] = {
      {"", "empty"},
      {"-1", "negative"},
      {"Mi", "no number"},
      {"1K", "unknown suffix"},
      {"1mi", "unknown suffix"},
      {"1 Mi", "unknown suffix"},
      {" 1", "no number"},
      {"1.", "decimal point must be followed by digits"},
      {"1.2.3", "unknown suffix"},
      {"1e", "unknown suffix"},
      {"1ee3", "unknown suffix"},
      {"1e99999", "unknown suffix"},
      {"1Mi\n", "unknown suffix"},
      {"9Pi", "too large"},
      {"99999999999999999999999999999999999", "too large"},
      {"1e30", "too large"},
      {"1E", "too large"},  // 10^18 units do not fit in milli-units: refused, never wrapped
      {"++1", "no number"},
  };
  for (const Case& c : cases) {
    auto q = Quantity::parse(c.input);
    ASSERT_FALSE(q.ok()) << "accepted " << c.input;
    EXPECT_EQ(q.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(q.error().message(), HasSubstr(c.why)) << c.input;
    EXPECT_THAT(q.error().message(), HasSubstr("invalid quantity \"")) << c.input;
  }
}

TEST(QuantityTest, ComparesByAmount) {
  EXPECT_EQ(*Quantity::parse("1Ki"), *Quantity::parse("1024"));
  EXPECT_LT(*Quantity::parse("999m"), *Quantity::parse("1"));
  EXPECT_EQ(Quantity::fromValue(3).milliValue(), 3000);
}

}  // namespace
}  // namespace vri
