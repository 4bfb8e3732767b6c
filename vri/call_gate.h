// CallGate: the calls that change the ledger, counted while they run, so that
// shutdown waits for those in flight — and only for those. gRPC's own
// Shutdown(deadline) also waits out the deadline for idle connections, so vrid
// drains here first and then shuts the servers down at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace vri {

class CallGate {
 public:
  // False once closing: the caller refuses the call.
  bool enter() {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    ++inFlight_;
    return true;
  }
  void leave() {
    {
      std::lock_guard lock(mutex_);
      --inFlight_;
    }
    idle_.notify_all();
  }
  // Refuses new calls and waits until none is in flight or `deadline` passes.
  void closeAndDrain(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    closed_ = true;
    idle_.wait_until(lock, deadline, [this] { return inFlight_ == 0; });
  }

 private:
  std::mutex mutex_;  // guards the two below
  int inFlight_ = 0;
  bool closed_ = false;
  std::condition_variable idle_;
};

}  // namespace vri
