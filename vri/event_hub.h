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

#include <string>

#include "base/clock.h"
#include "base/thread_annotations.h"

namespace vri {

// What happened; the API's Event.Kind mirrors it (the service converts).
enum class EventKind {
  kAdmitted,
  kRefused,
  kReleased,
  kResized,
  kReserved,
  kStarted,
  kAdopted,
  kSharedPoolChanged,
  kDriftRepaired,
  kReconcileFailed,
  kEventsLost,     // this watcher fell behind; `detail` says how many
  kWritePending,   // a decision's cgroup writes failed; its freed CPUs wait out of every pool
  kWriteLanded,    // the pending writes landed on a retry
  kHalted,         // an undo could not be committed: decisions stop until the ledger is reloaded
  kMoved,          // a running VM's threads moved live
  kPinsPending,    // libvirt's live pins could not be set; retried
  kPinsSet,        // the pending live pins are set
  kPinsDrifted,    // pins changed through libvirt behind VRI's back, then restored or adopted
  kPolicyPending,  // the configuration file's placement policy is not the ledger's yet
  kPolicyApplied,  // a new placement policy took effect; its moves have kMoved events
};

struct Event {
  uint64_t sequence = 0;
  int64_t unixMillis = 0;
  EventKind kind = EventKind::kAdmitted;
  std::string tenant;  // "pod/<uid>/<container>", "pod/<uid>", "vm/<uuid>"; empty for node events
  std::string detail;
};

class EventSubscription {
 public:
  enum class Next { kEvent, kTimeout, kClosed };
  explicit EventSubscription(const Clock& clock) : clock_(clock) {}
  // Waits up to `timeout` for the next event.
  Next next(std::chrono::milliseconds timeout, Event& event);

 private:
  friend class EventHub;
  const Clock& clock_;
  void push(const Event& event, size_t limit);
  void close();

  Mutex mutex_;
  std::condition_variable_any ready_;
  std::deque<Event> queue_ VRI_GUARDED_BY(mutex_);
  uint64_t lost_ VRI_GUARDED_BY(mutex_) = 0;
  bool closed_ VRI_GUARDED_BY(mutex_) = false;
};

class EventHub {
 public:
  // `clock` (which watchers' timeouts are measured by) must outlive the hub and its subscriptions.
  // The last `historyLimit` events are kept for watchers that ask for the recent past (vrictl events).
  explicit EventHub(const Clock& clock = steadyClock(), size_t queueLimit = 4096, size_t historyLimit = 256)
      : clock_(clock), queueLimit_(queueLimit), historyLimit_(historyLimit) {}

  void publish(EventKind kind, std::string tenant, std::string detail);
  // Every event from now on, after the last `recent` of those kept (none lost or repeated between them).
  std::shared_ptr<EventSubscription> subscribe(size_t recent = 0);
  // The last `recent` events kept, oldest first.
  std::vector<Event> recent(size_t recent) const;
  // Ends every subscription (shutdown); later subscriptions start closed.
  void close();

 private:
  const Clock& clock_;
  const size_t queueLimit_;
  const size_t historyLimit_;
  mutable Mutex mutex_;
  std::deque<Event> history_ VRI_GUARDED_BY(mutex_);
  uint64_t sequence_ VRI_GUARDED_BY(mutex_) = 0;
  bool closed_ VRI_GUARDED_BY(mutex_) = false;
  std::vector<std::weak_ptr<EventSubscription>> subscribers_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
