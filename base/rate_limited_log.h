// RateLimitedLog: one line per event (a refusal, a bad request), at most
// `perSecond` of them in any second. Callers on a socket anyone may write to
// cannot flood the log: what was dropped is counted in the next line written.
// Lines are made safe for a log first: control characters are escaped, so a
// newline in a caller's id cannot forge a line.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

class RateLimitedLog {
 public:
  RateLimitedLog(std::function<void(const std::string&)> sink, const Clock& clock, int perSecond = 20)
      : sink_(std::move(sink)), clock_(clock), perSecond_(perSecond) {}

  // Writes `line`, or counts it when this second's lines are spent.
  void write(std::string_view line);
  // How many lines were dropped so far, in all.
  uint64_t dropped() const;

 private:
  std::function<void(const std::string&)> sink_;
  const Clock& clock_;
  const int perSecond_;
  mutable Mutex mutex_;
  Clock::TimePoint windowStart_ VRI_GUARDED_BY(mutex_){};
  int inWindow_ VRI_GUARDED_BY(mutex_) = 0;
  uint64_t droppedSinceLine_ VRI_GUARDED_BY(mutex_) = 0;
  uint64_t droppedTotal_ VRI_GUARDED_BY(mutex_) = 0;
};

}  // namespace vri
