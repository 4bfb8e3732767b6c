// SerialExecutor: runs posted work on one thread of its own, in order.
//
// vrid's decisions run one at a time anyway; running those the API receives
// on one thread, and finishing each call from there, spares every waiting call
// a thread of gRPC's that sleeps on a lock and must be woken to answer.
// The destructor runs what is still queued, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "cgroup-model/thread_annotations.h"

namespace vri {

class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { runLoop(); }) {}
  ~SerialExecutor() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void post(std::function<void()> work) {
    {
      MutexLock lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

 private:
  void runLoop() {
    while (true) {
      std::function<void()> work;
      {
        MutexLock lock(mutex_);
        while (!stopping_ && queue_.empty()) lock.wait(wake_);
        if (queue_.empty()) return;  // stopping, and nothing left
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      work();
    }
  }

  Mutex mutex_;
  std::deque<std::function<void()>> queue_ VRI_GUARDED_BY(mutex_);
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::condition_variable_any wake_;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace vri
