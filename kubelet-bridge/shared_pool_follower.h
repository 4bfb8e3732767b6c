// SharedPoolFollower: keeps containerd's view of the shared containers in line
// with vrid's ledger, and vrid's ledger in line with what containerd still has.
//
// When the shared pool changes (a VM or a Guaranteed container takes CPUs, or
// gives them back), vrid writes every shared container's cgroup itself, first:
// an exclusive tenant must not start on CPUs still shared. containerd's stored
// spec, its ContainerStatus and runc's next write learn of it only through
// UpdateContainerResources, which the follower sends with full explicit values.
// It watches vrid's events: on a shared-pool change it lists vrid's pods and,
// in those run through a shim (their sandbox bound), updates every shared
// container whose values differ from what containerd was
// last given (or, for one it has not given anything yet, from what containerd
// reports). Per container at most one update is in flight and the latest
// request wins; a list older than one already taken is dropped, and the values
// sent are read from vrid just before sending, so a queued, stale, wider cpuset
// is never sent after a narrower one (runc would put the container back on an
// exclusive CPU). What remains is the time of one update: vrid narrowing the
// pool between that read and runc's write; the change's own event corrects it.
// NotFound from containerd means the container is gone.
//
// Every new Watch stream (the shim starting, vrid back) and every lost-events
// notice starts with a full pass: the ledger against containerd's lists
// (ledger_sync.h: release what is gone, adopt what runs unknown), then every
// shared container checked.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/generic/generic_stub.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "cgroup-model/thread_annotations.h"
#include "cgroup-model/worker_pool.h"
#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/memory_nodes.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

struct SharedPoolFollowerOptions {
  bool cgroupV2 = false;
  std::chrono::milliseconds reconnect{500};  // between Watch attempts while vrid is away
  std::chrono::milliseconds callTimeout{10000};
  int workers = 4;  // containers updated at once
  // kubelet's calls come first: while this says calls are in flight (the
  // shim's handled calls), an update waits, up to `yieldAtMost`. The kernel
  // already holds the new pool (vrid wrote it); containerd's copy can wait.
  std::function<int()> callsInFlight = [] { return 0; };
  std::chrono::milliseconds yieldAtMost{200};
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class SharedPoolFollower {
 public:
  SharedPoolFollower(std::shared_ptr<grpc::Channel> vrid, std::shared_ptr<grpc::Channel> containerd,
                     SharedPoolFollowerOptions options);
  ~SharedPoolFollower();  // stops: the Watch is cancelled, updates in flight finish

  void start();
  // Updates containerd has taken so far (tests and benchmarks wait on it).
  uint64_t updatesApplied() const { return applied_.load(); }
  // Full passes finished so far.
  uint64_t passes() const { return passes_.load(); }

 private:
  struct Wanted {
    std::string podUid;
    uint64_t sequence = 0;  // of the list that asked for it
  };
  void watchLoop();
  // Lists vrid's pods and queues every shared container's values; with
  // `checkLedger`, first brings the ledger in line with containerd (ledger_sync.h).
  // False when vrid could not be asked.
  bool pass(bool checkLedger);
  void want(const std::string& id, Wanted wanted);
  void dispatch() VRI_REQUIRES(mutex_);
  void apply(const std::string& id, const Wanted& wanted);
  // vrid's values for the container now; nullopt: gone from vrid, or no longer shared.
  std::optional<v1::ContainerAllocation> current(const std::string& id, const std::string& podUid);
  std::unique_ptr<grpc::ClientContext> context() const;

  std::unique_ptr<v1::Vri::Stub> vrid_;
  grpc::GenericStub containerd_;
  SharedPoolFollowerOptions options_;
  std::atomic<uint64_t> applied_{0}, passes_{0};

  Mutex mutex_;
  std::condition_variable_any wake_;
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  grpc::ClientContext* watch_ VRI_GUARDED_BY(mutex_) = nullptr;  // the stream to cancel at stop
  uint64_t listed_ VRI_GUARDED_BY(mutex_) = 0;                   // the newest list's sequence
  std::map<std::string, Wanted> wanted_ VRI_GUARDED_BY(mutex_);  // by container id, not yet sent
  std::set<std::string> inFlight_ VRI_GUARDED_BY(mutex_);
  std::map<std::string, std::string> given_ VRI_GUARDED_BY(mutex_);  // id -> the resources containerd last took
  MemoryNodes memoryNodes_;

  WorkerPool pool_;  // before the thread: the thread posts to it
  std::thread watcher_;
};

}  // namespace vri
