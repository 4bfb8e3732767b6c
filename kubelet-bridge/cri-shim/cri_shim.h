// CriShim: the CRI calls vri-cri-shim does not just pass through. Each runs on
// the shim's worker threads, calls vrid with a bounded deadline and the
// runtime with kubelet's, and holds no lock across either, so calls for
// different pods proceed in parallel.
//
//   RunPodSandbox     admit the pod (vrid reads its QoS class from its cgroup parent), run it,
//                     bind the sandbox id
//   CreateContainer   ask vrid for the allocation (by pod UID and container name, with the pod's
//                     containers that finished for good), write it into the request with full
//                     explicit values, create, bind the container id
//   UpdateContainerResources   resize through vrid, forward what vrid granted
//   RemoveContainer / RemovePodSandbox   remove, then release by runtime id (a no-op for an
//                     id that is no longer the current one)
//   RuntimeConfig     the runtime's answer as it is, once its cgroup driver is vrid's: kubelet
//                     takes its driver from this answer and would otherwise name pod cgroups
//                     that vrid does not know
//
// Without an allocation nothing is created: vrid's refusal comes back with its
// code and reason, and an unreachable vrid is UNAVAILABLE with a clear message.
// What a failed call admitted is released again; nothing is left half-applied,
// and what could not be undone is logged. StopPodSandbox passes through:
// kubelet stops a sandbox before re-creating it, and the pod keeps its CPUs
// until its sandbox is removed. The shim holds no placement rule: vrid decides
// from the facts the shim reads off the runtime's messages.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "base/rate_limited_log.h"
#include "kubelet-bridge/cri-shim/generic_proxy.h"
#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/node_cgroups.h"
#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/stopped_pod_releaser.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

struct CriShimOptions {
  std::chrono::milliseconds vridTimeout{2000};  // every vrid call, within kubelet's own deadline
  // Told of each sandbox kubelet stops and removes, to release a pod once kubelet is done with it
  // (stopped_pod_releaser.h); none: a pod is released when its sandbox is removed.
  StoppedPodReleaser* releaser = nullptr;
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class CriShim {
 public:
  // `runtime` and `vrid` (not owned) outlive the shim.
  CriShim(RuntimeClient& runtime, VridClient& vrid, CriShimOptions options);

  // The methods it handles, by full name, for GenericProxy: bytes in and out,
  // errors turned into statuses here, at the edge.
  std::map<std::string, UnaryHandler> handlers();

  // The calls themselves, for `kubelet`'s call (its deadline; its metadata and
  // cancellation when it came through gRPC).
  Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(const CallScope& kubelet,
                                                           const runtime::v1::RunPodSandboxRequest& run);
  Result<runtime::v1::CreateContainerResponse> createContainer(const CallScope& kubelet,
                                                               runtime::v1::CreateContainerRequest create);
  Result<void> startContainer(const CallScope& kubelet, const std::string& containerId);
  Result<void> updateContainerResources(const CallScope& kubelet, runtime::v1::UpdateContainerResourcesRequest update);
  Result<void> removeContainer(const CallScope& kubelet, const std::string& containerId);
  Result<void> stopPodSandbox(const CallScope& kubelet, const std::string& sandboxId);
  Result<void> removePodSandbox(const CallScope& kubelet, const std::string& sandboxId);
  Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope& kubelet);

 private:
  // The runtime removed `id`; vrid's release of it by runtime id (a no-op for an id it no longer holds).
  Result<void> afterRemoval(const char* call, const std::string& id, const Result<bool>& released);
  // A vrid call made for kubelet's: vridTimeout, or kubelet's deadline if sooner.
  CallScope vridScope(const CallScope& kubelet) const;
  // The pod's containers that finished for good, from the runtime's list.
  Result<std::vector<std::string>> finishedContainers(const CallScope& kubelet, const std::string& podUid,
                                                      const std::string& sandboxId, const std::string& creating);
  // Undo what a failed call admitted; each logs what it could not undo.
  void undoContainer(const v1::AdmitContainerRequest& admit);
  void undoPod(const std::string& podUid);
  // vrid back to `previous` after the runtime refused a resize vrid had made.
  void undoResize(const std::string& containerId, const v1::ContainerResources& previous);
  // The whole id the runtime knows `id` by (a unique prefix, as containerd takes it), or `id`.
  std::string wholeSandboxId(const CallScope& kubelet, const std::string& id);
  std::string wholeContainerId(const CallScope& kubelet, const std::string& id);
  // containerd's ids: 64 hexadecimal digits. An id of that length is taken as it is.
  static constexpr size_t kWholeIdLength = 64;
  // Takes down what the runtime made when vrid could not record it.
  void takeDownSandbox(const std::string& sandboxId);
  void takeDownContainer(const std::string& containerId);

  RuntimeClient& runtime_;
  VridClient& vrid_;
  CriShimOptions options_;
  RateLimitedLog refusals_;
  KnownNodeCgroups nodeCgroups_;
};

}  // namespace vri
