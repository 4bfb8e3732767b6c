// SharedPoolFollower: keeps the runtime's view of the shared containers in
// line with vrid's ledger.
//
// When the shared pool changes (a VM or a Guaranteed container takes CPUs, or
// gives them back), vrid writes every shared container's cgroup itself, first:
// an exclusive tenant must not start on CPUs still shared. The runtime's stored
// spec, its ContainerStatus and runc's next write learn of it only through
// UpdateContainerResources, which the follower sends with full explicit values.
// Each list of vrid's pods it is given (VridConnection, vrid_connection.h,
// gives one per pool change) queues every shared container of the pods run
// through a shim (their sandbox bound); a container is updated when its values
// differ from what the runtime was last given (or, for one it has not given
// anything yet, from what the runtime reports).
//
// Per container at most one update is in flight and the latest request wins;
// a list older than one already taken is dropped, and the values sent are read
// from vrid just before sending, so a queued, stale, wider cpuset is never sent
// after a narrower one (runc would put the container back on an exclusive CPU).
// What remains is the time of one update: vrid narrowing the pool between that
// read and runc's write; the change's own event corrects it. NotFound from the
// runtime means the container is gone. A failed update is tried again after
// `retryAfter` on the Clock, unless a newer value comes first. kubelet's calls
// come first: an update waits, up to `yieldAtMost`, until none is in flight,
// woken when the last one leaves.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/thread_annotations.h"
#include "base/worker_pool.h"
#include "kubelet-bridge/calls_in_flight.h"
#include "kubelet-bridge/node_cgroups.h"
#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

struct SharedPoolFollowerOptions {
  std::chrono::milliseconds callTimeout{10000};
  std::chrono::milliseconds retryAfter{500};    // after a failed update
  int workers = 4;                              // containers updated at once
  const CallsInFlight* kubeletCalls = nullptr;  // what updates give way to (none: nothing)
  std::chrono::milliseconds yieldAtMost{200};
  const Clock* clock = &steadyClock();  // retries and yields wait by it; not owned
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class SharedPoolFollower {
 public:
  // `vrid` and `runtime` (not owned) outlive the follower.
  SharedPoolFollower(VridClient& vrid, RuntimeClient& runtime, SharedPoolFollowerOptions options);
  ~SharedPoolFollower();  // stops: nothing more is sent, updates in flight finish

  // A new Watch stream: its vrid may be a new one, whose decisions count from
  // zero again, so lists are ordered anew and what was queued is dropped.
  void restart();
  // Takes the list's sequence when it is the newest so far (false: an older
  // list than one already taken; the caller drops it).
  bool take(uint64_t sequence);
  // Queues every shared container of `tenants` (a list already taken).
  void follow(const v1::TenantList& tenants);

  // Updates the runtime has taken so far (tests and benchmarks wait on it).
  uint64_t updatesApplied() const { return applied_.load(); }
  // Whether nothing is queued or in flight.
  bool idle() const;

 private:
  struct Wanted {
    std::string podUid;
    uint64_t sequence = 0;  // of the list that asked for it
  };
  void dispatch() VRI_REQUIRES(mutex_);
  void apply(const std::string& id, const Wanted& wanted);
  // vrid's values for the container now; nullopt: gone from vrid, or no longer shared; an error
  // when vrid could not say.
  Result<std::optional<v1::ContainerAllocation>> current(const std::string& id, const std::string& podUid);
  // After a failed step: said why, waits `retryAfter` (or stop), and queues the container again
  // unless a newer value came meanwhile.
  void retryLater(const std::string& id, const Wanted& wanted, const std::string& why);
  CallScope scope() const { return CallScope::within(options_.callTimeout); }

  VridClient& vrid_;
  RuntimeClient& runtime_;
  SharedPoolFollowerOptions options_;
  std::atomic<uint64_t> applied_{0};
  KnownNodeCgroups nodeCgroups_;

  mutable Mutex mutex_;
  std::condition_variable_any wake_;  // stop
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  uint64_t listed_ VRI_GUARDED_BY(mutex_) = 0;                   // the newest list's sequence
  std::map<std::string, Wanted> wanted_ VRI_GUARDED_BY(mutex_);  // by container id, not yet sent
  std::set<std::string> inFlight_ VRI_GUARDED_BY(mutex_);
  std::map<std::string, std::string> given_ VRI_GUARDED_BY(mutex_);  // id -> the resources the runtime last took

  WorkerPool pool_;  // last: its threads stop before the rest goes
};

}  // namespace vri
