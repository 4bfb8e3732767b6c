// Clock: where vrid reads the time it waits and times out by. Production code
// takes the steady clock; tests bring a manual one and move time themselves
// instead of sleeping.
#pragma once

#include <chrono>
#include <condition_variable>

#include "base/thread_annotations.h"

namespace vri {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  // Releases `lock` and waits on `cv` until notified or until `deadline` on this
  // clock. May return early without either (callers re-check what they wait
  // for). Returns whether the deadline has passed.
  virtual bool waitUntil(MutexLock& lock, std::condition_variable_any& cv, TimePoint deadline) const = 0;
  // Releases `lock` and waits on `cv` until notified, however long that takes
  // (an idle thread: its wake-up is a notify, never a time).
  virtual void wait(MutexLock& lock, std::condition_variable_any& cv) const { lock.wait(cv); }
};

class SteadyClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  bool waitUntil(MutexLock& lock, std::condition_variable_any& cv, TimePoint deadline) const override {
    return lock.waitUntil(cv, deadline) == std::cv_status::timeout || now() >= deadline;
  }
};

// The steady clock for code that is given none (it has no state to share).
inline const Clock& steadyClock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace vri
