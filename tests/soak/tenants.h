// What runs on a soak's node, driven the way its owners drive it: VMs defined, started and destroyed
// through libvirt (whose qemu hook asks vrid), pods run and removed through vri-cri-shim (as kubelet
// calls the CRI). Each tenant remembers whether its start was acknowledged: an acknowledged tenant
// must be running and in vrid's ledger until it is taken away, whatever failed in between.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tests/soak/soak_node.h"
#include "tools/cri-client/cri_client.h"

namespace vri::soak {

struct SoakVm {
  std::string name;
  bool dedicated = false;
  bool acked = false;  // `virsh start` succeeded, and it was not destroyed or killed since
};

struct SoakPod {
  std::string uid;
  bool guaranteed = false;  // one whole CPU, exclusive; else Burstable on the shared pool
  std::string parent;       // its cgroup parent as kubelet names it
  std::string sandbox, container;
  // RunPodSandbox's answer was lost (the shim died mid-call): vrid may hold the pod with no sandbox yet. As
  // kubelet does for a pod it still has, the sandbox is asked for again before the pod is removed.
  bool sandboxLost = false;
  bool acked = false;  // sandbox, container and start all succeeded, and it was not removed or killed since
};

// One client call that decides: how it ended and how long the client waited.
struct Outcome {
  bool ok = false;
  std::chrono::duration<double> took{};
  std::string detail;  // the refusal, when not ok
};

class NodeTenants {
 public:
  explicit NodeTenants(SoakNode& node) : node_(node) {}

  const std::vector<SoakVm>& vms() const { return vms_; }
  const std::vector<SoakPod>& pods() const { return pods_; }
  // Tenants whose removal failed (a daemon was down) and is tried again, as kubelet's sync loop would.
  size_t pendingRemovals() const { return podsToRemove_.size() + vmsToRemove_.size(); }

  // A new test domain, defined and started; not acknowledged when the start fails (it is then undefined).
  Outcome startVm(bool dedicated);
  // Destroys and undefines vms()[index]; it leaves the list either way (a failed removal is retried).
  Outcome destroyVm(size_t index);
  // A new pod with one container, through the shim.
  Outcome createPod(bool guaranteed);
  // Stops and removes pods()[index] through the shim, as kubelet deletes a pod.
  Outcome removePod(size_t index);
  // Tries the removals that failed before again; true when none is left.
  bool retryRemovals();

  // Kills the QEMU of the VM named `name` (SIGKILL): libvirt sees it die. The VM is no longer acknowledged.
  bool killQemu(const std::string& name);
  // Whether libvirt runs the domain `name`.
  bool running(const std::string& name) const;
  // Kills pods()[index]'s container process (SIGKILL). The pod is no longer acknowledged; it is
  // removed (retryRemovals) as kubelet removes a pod whose container failed.
  bool killContainer(size_t index);

  // Every running QEMU of a test domain, by its pid file.
  std::optional<pid_t> qemuPid(const std::string& name) const;

 private:
  bool removePodNow(const SoakPod& pod, std::string* why);
  bool removeContainerAndSandboxes(cri_client::CriClient& cri, const SoakPod& pod, std::string* why);
  bool removeVmNow(const std::string& name, std::string* why);

  SoakNode& node_;
  std::vector<SoakVm> vms_;
  std::vector<SoakPod> pods_;
  std::vector<SoakPod> podsToRemove_;
  std::vector<std::string> vmsToRemove_;
  int nextVm_ = 0;
  int nextPod_ = 0;
};

}  // namespace vri::soak
