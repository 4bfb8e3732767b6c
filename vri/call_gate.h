// CallGate: the calls that change the ledger, counted while they run, so that
// shutdown waits for those in flight — and only for those. gRPC's own
// Shutdown(deadline) also waits out the deadline for idle connections, so vrid
// drains here first and then shuts the servers down at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

class CallGate {
 public:
  // `clock` (the drain's deadline is measured by it) must outlive the gate.
  explicit CallGate(const Clock& clock = steadyClock()) : clock_(clock) {}

  // False once closing: the caller refuses the call.
  bool enter() {
    MutexLock lock(mutex_);
    if (closed_) return false;
    ++inFlight_;
    return true;
  }
  void leave() {
    {
      MutexLock lock(mutex_);
      --inFlight_;
    }
    idle_.notify_all();
  }
  // Refuses new calls and waits until none is in flight or `grace` has passed.
  void closeAndDrain(Clock::Duration grace) {
    MutexLock lock(mutex_);
    closed_ = true;
    const Clock::TimePoint deadline = clock_.now() + grace;
    while (inFlight_ > 0) {
      if (clock_.waitUntil(lock, idle_, deadline)) break;
    }
  }

 private:
  const Clock& clock_;
  Mutex mutex_;
  int inFlight_ VRI_GUARDED_BY(mutex_) = 0;
  bool closed_ VRI_GUARDED_BY(mutex_) = false;
  std::condition_variable_any idle_;
};

}  // namespace vri
