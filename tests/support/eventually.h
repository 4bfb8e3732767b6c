// Polls `done` until it holds or `limit` passes: for effects that arrive
// asynchronously (libvirt events, a daemon's reconnect), never for timing.
#pragma once

#include <chrono>
#include <thread>

namespace vri::testing {

template <typename Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace vri::testing
