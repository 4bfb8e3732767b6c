// How the read-only socket's scans share the decision thread. A scan (a dry-run reconcile, the tree
// compared with the kernel) reads the cgroupfs while no decision writes, so it takes its turn on the
// decision thread, and every admit queued behind it waits for the whole scan. The read-only socket
// is open to every member of socket_group: its scans run one at a time, each after a pause of four
// times the last one's length (at least kMinGap, at most kMaxGap), so that they take at most a fifth
// of the decision thread and a decision waits behind at most one of them; at most kMaxWaiting wait,
// the rest are refused. Root's admin socket is not paced.
#pragma once

#include <algorithm>
#include <condition_variable>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

class ScanPacer {
 public:
  static constexpr Clock::Duration kMinGap = std::chrono::milliseconds(100);
  static constexpr Clock::Duration kMaxGap = std::chrono::seconds(1);
  static constexpr int kMaxWaiting = 4;

  explicit ScanPacer(const Clock& clock) : clock_(clock) {}

  // A place in the line, or false when kMaxWaiting scans already wait.
  bool join() {
    MutexLock lock(mutex_);
    if (waiting_ >= kMaxWaiting) return false;
    ++waiting_;
    return true;
  }
  // For one who joined and will not scan after all.
  void leave() {
    MutexLock lock(mutex_);
    --waiting_;
  }
  // For one who joined: waits until the scans before it ended and the pause after the last one passed.
  void awaitTurn() {
    MutexLock lock(mutex_);
    while (running_) clock_.wait(lock, changed_);
    while (!clock_.waitUntil(lock, changed_, nextStart_)) {
    }
    running_ = true;
    --waiting_;
  }
  // When the next scan may start (after the one running, if any, ends).
  Clock::TimePoint nextStart() const {
    MutexLock lock(mutex_);
    return nextStart_;
  }
  // The scan that had its turn ended after `took`.
  void finished(Clock::Duration took) {
    {
      MutexLock lock(mutex_);
      running_ = false;
      nextStart_ = clock_.now() + std::clamp<Clock::Duration>(4 * took, kMinGap, kMaxGap);
    }
    changed_.notify_all();
  }

 private:
  const Clock& clock_;
  mutable Mutex mutex_;
  std::condition_variable_any changed_;
  int waiting_ VRI_GUARDED_BY(mutex_) = 0;
  bool running_ VRI_GUARDED_BY(mutex_) = false;
  Clock::TimePoint nextStart_ VRI_GUARDED_BY(mutex_){};
};

}  // namespace vri
