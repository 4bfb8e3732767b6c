// VridConnection: the shim's Watch on vrid's events, and what each stream
// starts with. Every new stream (the shim starting, vrid back) and every
// lost-events notice begins with a full pass: vrid's pods listed, the ledger
// brought in line with the runtime's lists (ledger_sync.h: release what is
// gone, adopt what runs unknown), then every shared container handed to the
// follower. A shared-pool change hands the follower a new list. While vrid is
// away it tries again every `reconnect`, on the Clock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/thread_annotations.h"
#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/shared_pool_follower.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

struct VridConnectionOptions {
  std::chrono::milliseconds reconnect{500};  // between Watch attempts while vrid is away
  std::chrono::milliseconds callTimeout{10000};
  const Clock* clock = &steadyClock();  // not owned
  std::function<void(const std::string&)> log = [](const std::string&) {};
  // Whether each full pass first brings the ledger in line with the runtime's lists. The NRI
  // plugin does that at each Synchronize instead: NRI has no lists to ask for.
  bool checkLedger = true;
};

class VridConnection {
 public:
  // Everything given (not owned) outlives the connection.
  VridConnection(VridClient& vrid, RuntimeClient& runtime, SharedPoolFollower& follower, VridConnectionOptions options);
  ~VridConnection();  // stops: the stream is cancelled, the thread joined

  void start();
  // Full passes finished so far, and streams opened (tests wait on them).
  uint64_t passes() const { return passes_.load(); }
  uint64_t streams() const { return streams_.load(); }

 private:
  void run();
  // Lists vrid's pods and hands them to the follower; with `checkLedger`, first
  // brings the ledger in line with the runtime. False when vrid could not be asked.
  bool pass(bool checkLedger);

  VridClient& vrid_;
  RuntimeClient& runtime_;
  SharedPoolFollower& follower_;
  VridConnectionOptions options_;
  std::atomic<uint64_t> passes_{0}, streams_{0};

  Mutex mutex_;
  std::condition_variable_any wake_;
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  EventStream* stream_ VRI_GUARDED_BY(mutex_) = nullptr;  // the stream to cancel at stop
  std::thread thread_;
};

}  // namespace vri
