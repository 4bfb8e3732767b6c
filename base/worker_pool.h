// WorkerPool: threads of a service's own for work posted from gRPC's callback
// reactions, which must never block (on two cores a few blocked reactions
// starve gRPC's executor). With one thread the work runs in order: vrid's
// read-only scans wait their turn on one, the hook socket serves its callers on
// a few, and the CRI shim runs its calls to vrid and containerd on several. The
// destructor runs what is still queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"

namespace vri {

class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  }
  // Runs what is queued, then joins.
  ~WorkerPool() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void post(std::function<void()> job) {
    {
      MutexLock lock(mutex_);
      queue_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        MutexLock lock(mutex_);
        while (queue_.empty() && !stopping_) lock.wait(wake_);
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();
    }
  }

  Mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<std::function<void()>> queue_ VRI_GUARDED_BY(mutex_);
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace vri
