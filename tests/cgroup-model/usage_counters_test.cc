#include "cgroup-model/usage_counters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(UsageCountersTest, V2CpuStatGivesTimeInNanosecondsAndThrottling) {
  const auto c = parseCpuStatV2(
      "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 40\nnr_throttled 30\n"
      "throttled_usec 1200000\nnr_bursts 0\nburst_usec 0\n");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->usageNs, 2'500'000'000u);
  EXPECT_EQ(c->periods, 40u);
  EXPECT_EQ(c->throttledPeriods, 30u);
  EXPECT_EQ(c->throttledNs, 1'200'000'000u);
  // Without the cpu controller the kernel shows the time alone.
  const auto time_only = parseCpuStatV2("usage_usec 7\nuser_usec 5\nsystem_usec 2");
  ASSERT_TRUE(time_only.ok());
  EXPECT_EQ(time_only->usageNs, 7000u);
  EXPECT_EQ(time_only->periods, 0u);
}

TEST(UsageCountersTest, V1CpuStatGivesThrottlingInNanoseconds) {
  const auto c = parseCpuStatV1("nr_periods 12\nnr_throttled 3\nthrottled_time 45000000\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->periods, 12u);
  EXPECT_EQ(c->throttledPeriods, 3u);
  EXPECT_EQ(c->throttledNs, 45'000'000u);
  EXPECT_EQ(c->usageNs, 0u);  // cpuacct.usage's
}

TEST(UsageCountersTest, WhatIsNotACounterIsRefused) {
  EXPECT_THAT(parseCpuStatV2("nr_periods 1").error().message(), HasSubstr("no usage_usec"));
  EXPECT_THAT(parseCpuStatV1("usage_usec 1").error().message(), HasSubstr("no nr_periods"));
  EXPECT_THAT(parseCpuStatV2("usage_usec -1").error().message(), HasSubstr("not a 'key value' line"));
  EXPECT_THAT(parseCpuStatV2("usage_usec").error().message(), HasSubstr("not a 'key value' line"));
  EXPECT_EQ(*parseCounterFile("123456\n"), 123456u);
  EXPECT_FALSE(parseCounterFile("max").ok());
  EXPECT_FALSE(parseCounterFile("").ok());
}

TEST(UsageCountersTest, ProcStatGivesEachCpusBusyAndTotalTime) {
  const auto cpus = parseProcStat(
      "cpu  300 0 100 1000 50 0 0 0 0 0\n"
      "cpu0 100 0 50 500 25 5 5 10 0 0\n"
      "cpu3 200 0 50 500 25 0 0 0 7 0\n"
      "intr 1 2 3\nctxt 99\n",
      100);
  ASSERT_TRUE(cpus.ok()) << cpus.error().message();
  ASSERT_EQ(cpus->size(), 2u);  // the "cpu" total is not a CPU
  EXPECT_EQ((*cpus)[0].cpu, 0);
  // Busy: user nice system irq softirq steal; total adds idle and iowait. 10 ms per tick.
  EXPECT_EQ((*cpus)[0].busyNs, (100ULL + 50 + 5 + 5 + 10) * 10000000);
  EXPECT_EQ((*cpus)[0].totalNs, (100ULL + 50 + 500 + 25 + 5 + 5 + 10) * 10000000);
  EXPECT_EQ((*cpus)[1].cpu, 3);
  EXPECT_FALSE(parseProcStat("cpu0 1 2 3\n", 100).ok());
  EXPECT_FALSE(parseProcStat("intr 1\n", 100).ok());
  EXPECT_FALSE(parseProcStat("cpu0 1 2 3 4 5 6 7 x\n", 100).ok());
}

}  // namespace
}  // namespace vri
