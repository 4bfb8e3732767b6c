// CallGate: the calls that change the ledger, counted while they run, so that
// shutdown waits for those in flight — and only for those. gRPC's own
// Shutdown(deadline) also waits out the deadline for idle connections, so vrid
// drains here first and then shuts the servers down at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "cgroup-model/thread_annotations.h"

namespace vri {

class CallGate {
 public:
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
  // Refuses new calls and waits until none is in flight or `deadline` passes.
  void closeAndDrain(std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mutex_);
    closed_ = true;
    while (inFlight_ > 0) {
      if (lock.waitUntil(idle_, deadline) == std::cv_status::timeout) break;
    }
  }

 private:
  Mutex mutex_;
  int inFlight_ VRI_GUARDED_BY(mutex_) = 0;
  bool closed_ VRI_GUARDED_BY(mutex_) = false;
  std::condition_variable_any idle_;
};

}  // namespace vri
