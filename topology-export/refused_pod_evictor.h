// RefusedPodEvictor: a pod VRI keeps refusing leaves the node (opt-in, vri-nrt-exporter
// --evict-after-refusals=N).
//
// kubelet retries a container VRI refuses, with back-off, forever: the pod never fails, so its
// controller never replaces it, although the scheduler, reading VRI's NodeResourceTopology object,
// would place it elsewhere. After N refusals of the same pod in a row (vrid's REFUSED events, with
// no admission of it between), the evictor asks the API server to evict it (the Eviction
// subresource: PodDisruptionBudgets are respected, and the pod's UID is a precondition, so a pod
// re-created under the same name is not the one evicted), after an Event on the pod that carries
// VRI's reason. Each pod is evicted once; a refused eviction (a budget) is asked again at the pod's
// next refusal. Not a Failed pod, as kubelet's own topology-manager refusal makes: a Failed pod of
// a Deployment is replaced, but a bare pod stays Failed for good, and an eviction goes through the
// budgets that say how many of an application may be away at once.
//
// The pod's namespace and name come from vrid (the events name its UID): a pod vrid has no record
// of (its sandbox's admission refused) is not evicted, and the log says so.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "kubelet-bridge/vrid_client.h"
#include "topology-export/kube_api.h"

namespace vri::topology_export {

struct RefusedPodEvictorOptions {
  std::string nodeName;  // the Event's source
  int refusals = 3;      // in a row, before the eviction
  std::chrono::milliseconds vridTimeout{2000};
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

// The pod UID a tenant names ("pod/<uid>" or "pod/<uid>/<container>"); empty for any other tenant.
std::string podUidOfTenant(const std::string& tenant);

class RefusedPodEvictor {
 public:
  // `api` is the evictor's own (KubeApi serves one thread); both outlive it.
  RefusedPodEvictor(VridClient& vrid, KubeApi& api, RefusedPodEvictorOptions options);
  ~RefusedPodEvictor();  // stopped and joined

  void start();
  // One of vrid's events: queued, so that whoever follows vrid's events never waits for the API server.
  void onEvent(const v1::Event& event);

 private:
  void run();
  void handle(const v1::Event& event);
  Result<void> evict(const std::string& uid, const std::string& reason);

  VridClient& vrid_;
  KubeApi& api_;
  RefusedPodEvictorOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<v1::Event> queue_;
  bool stopping_ = false;
  std::thread thread_;
  // The handling thread's own.
  std::map<std::string, int> refusals_;  // by pod UID: refusals since its last admission
  std::set<std::string> evictedPods_;    // UIDs evicted already
};

}  // namespace vri::topology_export
