#include "kubelet-bridge/vrid_connection.h"

#include "kubelet-bridge/ledger_sync.h"

namespace vri {

VridConnection::VridConnection(VridClient& vrid, RuntimeClient& runtime, SharedPoolFollower& follower,
                               VridConnectionOptions options)
    : vrid_(vrid), runtime_(runtime), follower_(follower), options_(std::move(options)) {}

VridConnection::~VridConnection() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    if (stream_ != nullptr) stream_->cancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void VridConnection::start() {
  thread_ = std::thread([this] { run(); });
}

void VridConnection::run() {
  bool said_following = false;  // the first stream's start is said too: one can tell a VridConnection is live
  bool said_away = false;
  for (;;) {
    std::unique_ptr<EventStream> stream = vrid_.watch();
    {
      MutexLock lock(mutex_);
      if (stopping_) return;
      stream_ = stream.get();
    }
    ++streams_;
    follower_.restart();
    // Events from here on are seen; the pass covers everything before.
    if (pass(true) && (said_away || !said_following)) {
      options_.log(said_following ? "following vrid's events again" : "following vrid's events");
      said_following = true;
      said_away = false;
    }
    v1::Event event;
    while (stream->next(event)) {
      if (event.kind() == v1::Event::SHARED_POOL_CHANGED) pass(false);
      if (event.kind() == v1::Event::EVENTS_LOST) pass(true);  // some changes were missed
    }
    const Error ended = stream->finish();
    MutexLock lock(mutex_);
    stream_ = nullptr;
    if (stopping_) return;
    // Said once per absence, however many streams fail before vrid is back; a vrid that restarts within
    // the reconnect interval is an absence too.
    if (!said_away) options_.log("vrid's events: " + ended.message() + "; following again when it is back");
    said_away = true;
    const Clock::TimePoint retry_at = options_.clock->now() + options_.reconnect;
    while (!stopping_ && !options_.clock->waitUntil(lock, wake_, retry_at)) {
    }
    if (stopping_) return;
  }
}

bool VridConnection::pass(bool checkLedger) {
  auto tenants = vrid_.listPods(CallScope::within(options_.callTimeout));
  if (!tenants.ok()) return false;                        // vrid away: the next stream tries again
  if (!follower_.take(tenants->sequence())) return true;  // an older list than one already taken
  if (checkLedger && options_.checkLedger) {
    syncLedger(LedgerSyncCalls{vrid_, runtime_, options_.callTimeout, options_.log}, *tenants);
    // What the sync adopted is followed too: a container adopted on every CPU (its client set none, as
    // outside kubelet's tree) is brought onto the shared pool now, not at the next change of it.
    auto synced = vrid_.listPods(CallScope::within(options_.callTimeout));
    if (synced.ok() && follower_.take(synced->sequence())) tenants = std::move(synced);
  }
  follower_.follow(*tenants);
  ++passes_;
  return true;
}

}  // namespace vri
