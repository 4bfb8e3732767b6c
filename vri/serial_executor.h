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

namespace vri {

class SerialExecutor {
 public:
  SerialExecutor() : thread_([this] { runLoop(); }) {}
  ~SerialExecutor() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  void post(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    wake_.notify_one();
  }

 private:
  void runLoop() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      work();
      lock.lock();
    }
  }

  std::mutex mutex_;  // guards the two below
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::condition_variable wake_;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace vri
