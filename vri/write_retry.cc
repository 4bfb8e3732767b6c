#include "vri/write_retry.h"

namespace vri {

WriteRetry::WriteRetry(std::chrono::milliseconds interval, const Clock& clock, std::function<void()> attempt)
    : interval_(interval), clock_(clock), attempt_(std::move(attempt)) {
  thread_ = std::thread([this] { loop(); });
}

WriteRetry::~WriteRetry() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void WriteRetry::writesFailed() {
  {
    MutexLock lock(mutex_);
    pending_ = true;
  }
  wake_.notify_all();
}

void WriteRetry::writesLanded() {
  MutexLock lock(mutex_);
  pending_ = false;
}

bool WriteRetry::writesPending() const {
  MutexLock lock(mutex_);
  return pending_;
}

void WriteRetry::setHalted(bool halted) {
  MutexLock lock(mutex_);
  halted_ = halted;
}

bool WriteRetry::halted() const {
  MutexLock lock(mutex_);
  return halted_;
}

void WriteRetry::loop() {
  while (true) {
    {
      MutexLock lock(mutex_);
      while (!stopping_ && !pending_ && !halted_) clock_.wait(lock, wake_);
      // Something to mend: try after the interval (a stop ends the wait early).
      const auto retryAt = clock_.now() + interval_;
      while (!stopping_ && !clock_.waitUntil(lock, wake_, retryAt)) {
      }
      if (stopping_) return;
    }
    attempt_();
  }
}

}  // namespace vri
