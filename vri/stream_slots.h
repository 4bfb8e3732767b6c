// A bound on the streams (Watch, WatchUsage) one socket serves at once. Each stream holds one of
// the socket's server threads for as long as it lasts (gRPC's synchronous streaming handlers), so
// without a bound anyone who may open the read-only socket could hold thousands of threads, and the
// task limit the admin socket's calls need too. A stream past the bound is refused at once.
#pragma once

#include <atomic>
#include <cstddef>

namespace vri {

class StreamSlots {
 public:
  explicit StreamSlots(size_t limit) : limit_(limit) {}
  size_t limit() const { return limit_; }
  size_t inUse() const { return inUse_.load(); }

  // One slot while it lives; taken() says whether there was one.
  class Slot {
   public:
    explicit Slot(StreamSlots& slots) : slots_(slots) {
      size_t now = slots_.inUse_.load();
      while (now < slots_.limit_ && !slots_.inUse_.compare_exchange_weak(now, now + 1)) {
      }
      taken_ = now < slots_.limit_;
    }
    ~Slot() {
      if (taken_) slots_.inUse_.fetch_sub(1);
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    bool taken() const { return taken_; }

   private:
    StreamSlots& slots_;
    bool taken_ = false;
  };

 private:
  const size_t limit_;
  std::atomic<size_t> inUse_{0};
};

}  // namespace vri
