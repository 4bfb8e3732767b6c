// ManualClock: time that moves only when a test says so. A wait on it returns
// when notified, when the test has moved past its deadline, or after a
// millisecond of real time (so a move is never missed: waiters re-check).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <set>

#include "base/clock.h"

namespace vri::testing {

class ManualClock final : public Clock {
 public:
  TimePoint now() const override { return start_ + Duration(offset_.load()); }
  bool waitUntil(MutexLock& lock, std::condition_variable_any& cv, TimePoint deadline) const override {
    if (now() >= deadline) return true;
    std::multiset<TimePoint>::iterator entry;
    {
      std::lock_guard guard(waitersMutex_);
      entry = deadlines_.insert(deadline);
    }
    lock.waitFor(cv, std::chrono::milliseconds(1));
    {
      std::lock_guard guard(waitersMutex_);
      deadlines_.erase(entry);
    }
    return now() >= deadline;
  }

  // An idle wait, as the steady clock's, after `beforeIdleWait` (with the
  // waiter's lock held): a test makes something happen exactly between a
  // waiter's last check and its wait, where a notify not sent under that
  // lock would be lost.
  void wait(MutexLock& lock, std::condition_variable_any& cv) const override {
    std::function<void()> before;
    {
      std::lock_guard guard(waitersMutex_);
      before = beforeIdleWait_;
    }
    if (before) before();
    lock.wait(cv);
  }
  void setBeforeIdleWait(std::function<void()> before) {
    std::lock_guard guard(waitersMutex_);
    beforeIdleWait_ = std::move(before);
  }

  void advance(Duration by) { offset_ += by.count(); }
  void advanceTo(TimePoint when) {
    if (when > now()) advance(when - now());
  }
  // The earliest deadline still ahead that a thread is waiting for, if any
  // (a waiter that has not yet noticed a move past its deadline is not counted).
  std::optional<TimePoint> nextDeadline() const {
    std::lock_guard guard(waitersMutex_);
    const auto ahead = deadlines_.upper_bound(now());
    if (ahead == deadlines_.end()) return std::nullopt;
    return *ahead;
  }

 private:
  const TimePoint start_ = std::chrono::steady_clock::now();
  std::atomic<Duration::rep> offset_{0};
  mutable std::mutex waitersMutex_;
  mutable std::multiset<TimePoint> deadlines_;
  std::function<void()> beforeIdleWait_;  // guarded by waitersMutex_
};

}  // namespace vri::testing
