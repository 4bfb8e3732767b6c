// The read-only socket's scans on a manual clock: one at a time, each after a pause of four times
// the last one's length within its bounds, and a short line.
#include "vri/scan_pacer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/eventually.h"
#include "tests/support/manual_clock.h"

namespace vri {
namespace {

using std::chrono::milliseconds;

TEST(ScanPacerTest, ScansRunOneAtATimeAfterAPauseOfFourTimesTheLastOne) {
  testing::ManualClock clock;
  ScanPacer pacer(clock);
  ASSERT_TRUE(pacer.join());
  pacer.awaitTurn();  // nothing ran before: at once
  std::atomic<bool> second_started{false};
  ASSERT_TRUE(pacer.join());
  std::thread second([&] {
    pacer.awaitTurn();
    second_started = true;
  });
  clock.advance(milliseconds(100));  // the first runs 100 ms: the second waits for it
  pacer.finished(milliseconds(100));
  EXPECT_EQ(pacer.nextStart(), clock.now() + milliseconds(400));
  EXPECT_FALSE(second_started);
  clock.advance(milliseconds(400));
  EXPECT_TRUE(testing::eventually([&] { return second_started.load(); }));
  second.join();
  // The pause's bounds.
  pacer.finished(milliseconds(1));
  EXPECT_EQ(pacer.nextStart(), clock.now() + ScanPacer::kMinGap);
  ASSERT_TRUE(pacer.join());
  clock.advance(ScanPacer::kMinGap);
  pacer.awaitTurn();
  pacer.finished(std::chrono::seconds(30));
  EXPECT_EQ(pacer.nextStart(), clock.now() + ScanPacer::kMaxGap);
}

TEST(ScanPacerTest, AtMostAFewWaitAndOneWhoLeavesFreesItsPlace) {
  testing::ManualClock clock;
  ScanPacer pacer(clock);
  for (int i = 0; i < ScanPacer::kMaxWaiting; ++i) ASSERT_TRUE(pacer.join());
  EXPECT_FALSE(pacer.join());
  pacer.leave();
  EXPECT_TRUE(pacer.join());
}

}  // namespace
}  // namespace vri
