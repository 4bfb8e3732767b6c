// The events vrid keeps for watchers that ask for the recent past: bounded,
// oldest first, and a watcher that asks for them and for what follows misses
// nothing between the two and sees nothing twice.
#include "vri/event_hub.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

std::vector<std::string> details(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.detail);
  return out;
}

TEST(EventHubTest, KeepsTheLastEventsUpToItsLimitOldestFirst) {
  EventHub hub(steadyClock(), 16, 3);
  EXPECT_TRUE(hub.recent(10).empty());
  for (const char* d : {"a", "b", "c", "d"}) hub.publish(EventKind::kAdmitted, "", d);
  EXPECT_THAT(details(hub.recent(10)), ::testing::ElementsAre("b", "c", "d"));
  EXPECT_THAT(details(hub.recent(2)), ::testing::ElementsAre("c", "d"));
  EXPECT_TRUE(hub.recent(0).empty());
}

TEST(EventHubTest, ASubscriptionWithRecentEventsGetsThemThenWhatFollowsOnce) {
  EventHub hub(steadyClock(), 16, 8);
  for (const char* d : {"a", "b", "c"}) hub.publish(EventKind::kAdmitted, "", d);
  const auto subscription = hub.subscribe(2);
  hub.publish(EventKind::kReleased, "", "d");
  std::vector<std::string> seen;
  Event event;
  while (subscription->next(std::chrono::milliseconds(0), event) == EventSubscription::Next::kEvent)
    seen.push_back(event.detail);
  EXPECT_THAT(seen, ::testing::ElementsAre("b", "c", "d"));
  const auto none = hub.subscribe();
  EXPECT_EQ(none->next(std::chrono::milliseconds(0), event), EventSubscription::Next::kTimeout);
}

}  // namespace
}  // namespace vri
