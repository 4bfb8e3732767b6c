#include "vri/decision_queue.h"

#include <grpc/support/time.h>

namespace vri {

DecisionQueue::DecisionQueue(std::unique_ptr<grpc::ServerCompletionQueue> queue)
    : queue_(std::move(queue)), thread_([this] { poll(); }) {}

DecisionQueue::~DecisionQueue() { stop(); }

void DecisionQueue::post(std::function<void()> job) {
  {
    MutexLock lock(mutex_);
    if (!stopped_) {
      posted_.push_back(std::move(job));
      // Closing: the thread runs what is posted once the queue is drained, and the queue takes no
      // more alarms.
      if (closing_ || wakePending_) return;
      wakePending_ = true;
      // Under the lock, so that stop() cannot shut the queue down between the check and the set.
      alarm_.Set(queue_.get(), gpr_now(GPR_CLOCK_MONOTONIC), static_cast<Tag*>(&wake_));
      return;
    }
  }
  job();
}

void DecisionQueue::Wake::proceed(bool) {
  {
    MutexLock lock(queue_.mutex_);
    queue_.wakePending_ = false;
  }
  queue_.runPosted();
}

void DecisionQueue::runPosted() {
  for (;;) {
    std::function<void()> job;
    {
      MutexLock lock(mutex_);
      if (posted_.empty()) return;
      job = std::move(posted_.front());
      posted_.pop_front();
    }
    job();
  }
}

void DecisionQueue::poll() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_->Next(&tag, &ok)) static_cast<Tag*>(tag)->proceed(ok);
  runPosted();
}

void DecisionQueue::stop() {
  {
    MutexLock lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  queue_->Shutdown();
  thread_.join();
  {
    MutexLock lock(mutex_);
    stopped_ = true;
  }
  runPosted();  // what came between the thread's last look and stopped_
}

}  // namespace vri
