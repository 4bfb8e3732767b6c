// NriPlacement: what vri-nri-plugin does with each pod and container event the runtime relays,
// on the kubelet side's one core (cri_translate.h, through nri_cri_terms.h), as the CRI shim does
// with kubelet's calls:
//   RunPodSandbox     admit the pod with its sandbox bound (NRI relays it once the sandbox exists)
//   CreateContainer   admit the container with its id bound, and answer vrid's allocation as the
//                     container's adjustment: CPUs and memory nodes, shares (and cpu.weight on
//                     v2), quota and period, memory limit. A refusal fails the creation with
//                     "vri: <reason>"; the runtime then creates nothing. When the container takes
//                     exclusive CPUs, the running shared containers are narrowed in the same
//                     answer (its update list), so the runtime's records never lag the kernel's;
//                     the shared-pool follower covers every other change of the pool.
//   UpdateContainer   resize through vrid, answered as an update of that container; a container
//                     vrid does not know is the runtime's own business
//   StopContainer     noted: a container that has exited for good (a completed init container, a
//                     container of a replaced sandbox) gives its exclusive CPUs to the next one
//                     its pod creates, by the shim's rule (cri::finishedContainers). That needs the
//                     exit code, which NRI reports from containerd 2.4 on; before that, it is asked
//                     of the runtime's CRI when the pod's next container is created (kubelet has
//                     seen the exit there before it creates the next one)
//   RemoveContainer,  release by id: only what holds that id now, so a removal that comes after a
//   RemovePodSandbox  re-created sandbox or container changes nothing
// One call at a time: the runtime's requests are served in order on the connection's serving
// thread, and Synchronize starts each session's record afresh.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/node_cgroups.h"
#include "kubelet-bridge/nri-plugin/nri_runtime_updates.h"
#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/vrid_client.h"
#include "nri/nri_api.pb.h"

namespace vri {

class NriPlacement {
 public:
  using Log = std::function<void(const std::string&)>;
  // `runtime` records what the runtime is told of each container, for the shared-pool follower.
  // `cri`, when set, is the runtime's CRI endpoint, asked for the exit codes NRI does not report.
  NriPlacement(VridClient& vrid, NriRuntimeUpdates& runtime, RuntimeClient* cri, Log log);

  // The runtime's request being answered is answered by `deadline`: every vrid call made for it
  // shares that time (NRI disconnects a plugin that misses the runtime's timeout). Set before each.
  void answerBy(std::chrono::system_clock::time_point deadline) { deadline_ = deadline; }
  std::chrono::system_clock::time_point answerBy() const { return deadline_; }
  // A vrid call made for that request (vrid restarting is waited for, within the deadline).
  CallScope vridScope() const;
  // Whether a failed RunPodSandbox is cleaned up by the runtime (containerd 2.0 and 2.1 leak the
  // sandbox's pause process): where not, a sandbox vrid could not be asked about goes ahead, and
  // its pod is admitted with its first container, which is refused until vrid answers.
  void setRuntimeStopsFailedSandboxes(bool stops) { runtimeStopsFailedSandboxes_ = stops; }

  Result<::nri::pkg::api::v1alpha1::RunPodSandboxResponse> runPodSandbox(
      const ::nri::pkg::api::v1alpha1::PodSandbox& pod);
  Result<::nri::pkg::api::v1alpha1::CreateContainerResponse> createContainer(
      const ::nri::pkg::api::v1alpha1::CreateContainerRequest& request);
  Result<::nri::pkg::api::v1alpha1::UpdateContainerResponse> updateContainer(
      const ::nri::pkg::api::v1alpha1::UpdateContainerRequest& request);
  void containerStopped(const ::nri::pkg::api::v1alpha1::PodSandbox& pod,
                        const ::nri::pkg::api::v1alpha1::Container& container);
  void containerRemoved(const ::nri::pkg::api::v1alpha1::PodSandbox& pod,
                        const ::nri::pkg::api::v1alpha1::Container& container);
  void podRemoved(const ::nri::pkg::api::v1alpha1::PodSandbox& pod);
  // The updates to answer Synchronize with, once the ledger sync has run: the runtime's records of
  // the containers it adopted or placed anew.
  std::vector<::nri::pkg::api::v1alpha1::ContainerUpdate> updatesAfterSynchronize();
  // What the runtime reported at the start of a session: the record of each pod's containers.
  void synchronized(const std::vector<::nri::pkg::api::v1alpha1::PodSandbox>& pods,
                    const std::vector<::nri::pkg::api::v1alpha1::Container>& containers);

 private:
  void note(const std::string& podUid, const std::string& containerId, cri::SeenContainer seen);
  std::vector<std::string> finishedBefore(const std::string& podUid, const std::string& creating,
                                          const std::string& sandboxId);
  // The exit of a container NRI reported without an exit code (or not at all yet), from the runtime's CRI.
  void learnExitFromCri(const std::string& containerId, cri::SeenContainer& seen);
  void releaseRemoved(const std::string& what, const std::function<Result<bool>()>& release);

  // Updates that bring the runtime's records of vrid's containers to vrid's allocations, where they
  // differ (only the shared ones with `sharedOnly`; `except` skipped), recorded as sent.
  std::vector<::nri::pkg::api::v1alpha1::ContainerUpdate> updatesToLedger(const cri::NodeCgroups& node,
                                                                          const std::string& except, bool sharedOnly);

  VridClient& vrid_;
  NriRuntimeUpdates& runtime_;
  RuntimeClient* const cri_;
  std::chrono::system_clock::time_point deadline_ = std::chrono::system_clock::now();
  bool runtimeStopsFailedSandboxes_ = true;
  // Sandboxes that went ahead while vrid did not answer: admitted with their first container.
  std::set<std::string> unadmittedSandboxes_;
  const Log log_;
  KnownNodeCgroups nodeCgroups_;
  // Each pod's containers as the runtime has relayed them (by pod UID, then container id): the
  // facts the finished-container rule reads, as the shim reads them from the runtime's list.
  std::map<std::string, std::map<std::string, cri::SeenContainer>> containersOfPod_;
  // kubelet gives every container a hugepage limit per page size the host has: a container that comes
  // with none means the runtime dropped them (containerd's disable_hugetlb_controller), said once.
  bool toldNoHugepageLimits_ = false;
};

}  // namespace vri
