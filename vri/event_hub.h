// Fan-out of vrid's events to every watcher (vrictl, the kubelet shim).
//
// Publishing never blocks on a slow watcher: each has a bounded queue, and a
// watcher that falls behind loses the oldest events and is told how many.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "proto/vri.pb.h"

namespace vri {

class EventSubscription {
 public:
  enum class Next { kEvent, kTimeout, kClosed };
  // Waits up to `timeout` for the next event.
  Next next(std::chrono::milliseconds timeout, v1::Event& event);

 private:
  friend class EventHub;
  void push(const v1::Event& event, size_t limit);
  void close();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<v1::Event> queue_;
  uint64_t lost_ = 0;
  bool closed_ = false;
};

class EventHub {
 public:
  explicit EventHub(size_t queueLimit = 4096) : queueLimit_(queueLimit) {}

  void publish(v1::Event::Kind kind, std::string tenant, std::string detail);
  std::shared_ptr<EventSubscription> subscribe();
  // Ends every subscription (shutdown); later subscriptions start closed.
  void close();

 private:
  const size_t queueLimit_;
  std::mutex mutex_;
  uint64_t sequence_ = 0;
  bool closed_ = false;
  std::vector<std::weak_ptr<EventSubscription>> subscribers_;
};

}  // namespace vri
