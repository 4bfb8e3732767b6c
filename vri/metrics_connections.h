// Which connections the metrics endpoint keeps when it is full. A scrape sends its whole request
// at once and is then being answered; a client that holds a connection without finishing a request
// (idle, or a byte every few seconds) is the one that gives way. So a new connection is taken while
// fewer than `limit` are open; otherwise the oldest connection that is not being answered is closed
// for it, and only when every open connection is being answered is the new one refused. No
// connection is kept longer than `lifetime` (checked whenever one arrives), whatever it sends.
//
// Used on libmicrohttpd's one polling thread only (metrics_server.cc), so it takes no lock.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <list>

namespace vri {

class MetricsConnections {
 public:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    int fd = -1;
    Clock::time_point opened;
    bool answering = false;  // a whole request arrived and its answer is not yet sent
  };

  MetricsConnections(size_t limit, Clock::duration lifetime) : limit_(limit), lifetime_(lifetime) {}

  // Before a new connection is accepted: makes room by closing what gives way (their sockets are
  // shut down; libmicrohttpd then sees them end and closes them). False: refuse the newcomer.
  bool makeRoom(Clock::time_point now) {
    for (Slot& slot : slots_) {
      if (now - slot.opened >= lifetime_) shutDown(slot);
    }
    if (open() < limit_) return true;
    for (Slot& slot : slots_) {  // oldest first
      if (!slot.answering && slot.fd >= 0) {
        shutDown(slot);
        return true;
      }
    }
    return false;
  }

  Slot* opened(int fd, Clock::time_point now) {
    slots_.push_back(Slot{fd, now, false});
    return &slots_.back();
  }

  void closed(const Slot* slot) {
    slots_.remove_if([slot](const Slot& s) { return &s == slot; });
  }

  // Slots whose sockets are still in use (shut-down ones only wait for libmicrohttpd to close them).
  size_t open() const {
    size_t n = 0;
    for (const Slot& slot : slots_) n += slot.fd >= 0 ? 1 : 0;
    return n;
  }

 private:
  static void shutDown(Slot& slot) {
    if (slot.fd < 0) return;
    ::shutdown(slot.fd, SHUT_RDWR);
    slot.fd = -1;
  }

  size_t limit_;
  Clock::duration lifetime_;
  std::list<Slot> slots_;  // in the order they were opened; a list so that slots do not move
};

}  // namespace vri
