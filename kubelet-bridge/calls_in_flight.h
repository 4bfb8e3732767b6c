// CallsInFlight: kubelet's handled calls while they run, and a wait for the
// moment none is: the pool follower's updates give way to kubelet's calls and
// wake when the last one leaves, not by polling.
#pragma once

#include <condition_variable>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

class CallsInFlight {
 public:
  void enter() {
    MutexLock lock(mutex_);
    ++count_;
  }
  void leave() {
    {
      MutexLock lock(mutex_);
      if (--count_ > 0) return;
    }
    idle_.notify_all();
  }
  int count() const {
    MutexLock lock(mutex_);
    return count_;
  }
  // Until no call is in flight or `deadline` passes on `clock`; true when idle.
  bool waitIdle(const Clock& clock, Clock::TimePoint deadline) const {
    MutexLock lock(mutex_);
    while (count_ > 0) {
      if (clock.waitUntil(lock, idle_, deadline)) return count_ == 0;
    }
    return true;
  }

 private:
  mutable Mutex mutex_;
  int count_ VRI_GUARDED_BY(mutex_) = 0;
  mutable std::condition_variable_any idle_;
};

}  // namespace vri
