// WriteRetry: the thread that lands what decisions could not. Two things make
// it work: cgroup writes that failed (pending, until a reconcile lands them)
// and a halt (an undo that could not be committed: decisions are refused until
// the ledger is reloaded). While either holds it calls `attempt` once per
// interval; `attempt` clears them when it succeeds.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

class WriteRetry {
 public:
  // `attempt` runs on the retry thread; it reads halted() to know which of the two to mend.
  WriteRetry(std::chrono::milliseconds interval, const Clock& clock, std::function<void()> attempt);
  ~WriteRetry();  // stops the thread and waits for it
  WriteRetry(const WriteRetry&) = delete;
  WriteRetry& operator=(const WriteRetry&) = delete;

  // Writes failed: try again after the interval.
  void writesFailed();
  // The last reconcile landed everything.
  void writesLanded();
  bool writesPending() const;

  void setHalted(bool halted);
  bool halted() const;
  // Wakes the thread now (a halt it is to mend at its next interval).
  void wake() { wake_.notify_all(); }

 private:
  void loop();

  const std::chrono::milliseconds interval_;
  const Clock& clock_;
  const std::function<void()> attempt_;
  // Whatever the thread waits for is set under this mutex and notified after:
  // it checks, then waits, and a change that slips between the two (made
  // without the mutex) is a lost wake-up.
  mutable Mutex mutex_;
  std::condition_variable_any wake_;
  bool halted_ VRI_GUARDED_BY(mutex_) = false;   // decisions refused until the ledger is reloaded
  bool pending_ VRI_GUARDED_BY(mutex_) = false;  // writes failed and not landed yet
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: started once everything it reads exists
};

}  // namespace vri
