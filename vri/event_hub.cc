#include "vri/event_hub.h"

#include <algorithm>

namespace vri {

EventSubscription::Next EventSubscription::next(std::chrono::milliseconds timeout, Event& event) {
  MutexLock lock(mutex_);
  const auto deadline = clock_.now() + timeout;
  while (!closed_ && lost_ == 0 && queue_.empty()) {
    if (clock_.waitUntil(lock, ready_, deadline)) break;
  }
  if (lost_ > 0) {
    event = Event{};
    event.kind = EventKind::kEventsLost;
    event.detail = std::to_string(lost_) + " events lost: this watcher fell behind";
    lost_ = 0;
    return Next::kEvent;
  }
  if (!queue_.empty()) {
    event = std::move(queue_.front());
    queue_.pop_front();
    return Next::kEvent;
  }
  return closed_ ? Next::kClosed : Next::kTimeout;
}

void EventSubscription::push(const Event& event, size_t limit) {
  {
    MutexLock lock(mutex_);
    if (queue_.size() >= limit) {
      queue_.pop_front();
      ++lost_;
    }
    queue_.push_back(event);
  }
  ready_.notify_one();
}

void EventSubscription::close() {
  {
    MutexLock lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

void EventHub::publish(EventKind kind, std::string tenant, std::string detail) {
  Event event{0,
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                  .count(),
              kind, std::move(tenant), std::move(detail)};
  MutexLock lock(mutex_);
  event.sequence = ++sequence_;
  if (historyLimit_ > 0) {
    if (history_.size() >= historyLimit_) history_.pop_front();
    history_.push_back(event);
  }
  std::erase_if(subscribers_, [&](const std::weak_ptr<EventSubscription>& weak) {
    const auto subscriber = weak.lock();
    if (!subscriber) return true;
    subscriber->push(event, queueLimit_);
    return false;
  });
}

std::shared_ptr<EventSubscription> EventHub::subscribe(size_t recent) {
  auto subscription = std::make_shared<EventSubscription>(clock_);
  MutexLock lock(mutex_);
  const size_t replay = std::min(recent, history_.size());
  for (size_t i = history_.size() - replay; i < history_.size(); ++i) subscription->push(history_[i], queueLimit_);
  if (closed_) {
    subscription->close();
  } else {
    subscribers_.push_back(subscription);
  }
  return subscription;
}

std::vector<Event> EventHub::recent(size_t recent) const {
  MutexLock lock(mutex_);
  const size_t n = std::min(recent, history_.size());
  return std::vector<Event>(history_.end() - static_cast<std::ptrdiff_t>(n), history_.end());
}

void EventHub::close() {
  MutexLock lock(mutex_);
  closed_ = true;
  for (const auto& weak : subscribers_) {
    if (const auto subscriber = weak.lock()) subscriber->close();
  }
  subscribers_.clear();
}

}  // namespace vri
