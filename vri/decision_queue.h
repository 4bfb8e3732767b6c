// DecisionQueue: a VriService's decision thread. It polls the gRPC completion queue on which the
// service's deciding calls arrive (served with gRPC's asynchronous API), so the thread that decides
// a call also takes its request and sends its reply: no hand-over from gRPC's threads and back,
// which cost a shared admit+release pair a fifth of its throughput. Work posted from elsewhere (the
// hook socket's calls, the scans, MoveVm) runs on the same thread between calls, in the order
// posted: one thread decides, one decision at a time.
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/completion_queue.h>

#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "base/thread_annotations.h"

namespace vri {

class DecisionQueue {
 public:
  // What the completion queue hands back: one step of a call, or the posted work's wake-up.
  class Tag {
   public:
    // `ok`: gRPC's flag for the step (false: the call never came, the server shut down).
    virtual void proceed(bool ok) = 0;

   protected:
    ~Tag() = default;
  };

  // `queue`: from the server's builder (AddCompletionQueue), polled from now on.
  explicit DecisionQueue(std::unique_ptr<grpc::ServerCompletionQueue> queue);
  // Stops, if stop() did not.
  ~DecisionQueue();
  DecisionQueue(const DecisionQueue&) = delete;
  DecisionQueue& operator=(const DecisionQueue&) = delete;

  grpc::ServerCompletionQueue* completionQueue() const { return queue_.get(); }

  // Runs `job` on the decision thread, after what was posted before. Once stopped, at once on the
  // caller's thread: nothing else decides by then, and a caller waiting on its job is answered.
  void post(std::function<void()> job);

  // After the server's Shutdown: the queue drained, what was posted run, the thread joined.
  void stop();

 private:
  class Wake final : public Tag {
   public:
    explicit Wake(DecisionQueue& queue) : queue_(queue) {}
    void proceed(bool ok) override;

   private:
    DecisionQueue& queue_;
  };
  void poll();
  // Runs what was posted until now.
  void runPosted();

  const std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  Wake wake_{*this};
  grpc::Alarm alarm_;  // set to fire at once when work is posted and no wake-up is pending
  Mutex mutex_;
  std::deque<std::function<void()>> posted_ VRI_GUARDED_BY(mutex_);
  bool wakePending_ VRI_GUARDED_BY(mutex_) = false;
  bool closing_ VRI_GUARDED_BY(mutex_) = false;  // stop() began: no more alarms
  bool stopped_ VRI_GUARDED_BY(mutex_) = false;  // the thread is gone: posted work runs at once
  std::thread thread_;
};

}  // namespace vri
