// CgroupSync::reconciledTree: what a reconcile writes and compares with the
// kernel — the ledger's tree, less what is not vrid's to write or to miss:
// controllers it does not manage, containers that have exited, and the roots
// libvirt and kubelet have not made yet.
#include "vri/cgroup_sync.h"
#include "vri/ledger_tree.h"

namespace vri {

Result<DesiredTree> CgroupSync::reconciledTree(const LedgerState& state) const {
  VRI_ASSIGN_OR_RETURN(DesiredTree desired, desiredTreeFromLedger(state, inputs()));
  dropUnmanaged(desired);
  dropExitedContainers(state, desired);
  dropRootsNotYetMade(state, desired);
  return desired;
}

void CgroupSync::dropRootsNotYetMade(const LedgerState& state, DesiredTree& tree) const {
  const auto drop_unless_vrids = [&](const CgroupPath& root) {
    for (const CgroupPath& managed : tree.managedRoots) {
      if (root.isWithin(managed)) return;  // vrid makes it
    }
    std::erase_if(tree.cgroups, [&](const auto& entry) { return entry.first.isWithin(root); });
  };
  if (state.vmScopes.empty() && !fs_.exists({cpusetHierarchy_, layout_.machinePartition}))
    drop_unless_vrids(layout_.machinePartition);
  if (state.pods.empty() && !fs_.exists({cpusetHierarchy_, kubeletNamer_->kubepods()}))
    drop_unless_vrids(kubeletNamer_->kubepods());
}

void CgroupSync::dropExitedContainers(const LedgerState& state, DesiredTree& tree) const {
  for (const auto& entry : state.pods) {
    const std::string& uid = entry.first;  // (clang 14's lambdas cannot capture bindings)
    const PodRecord& pod = entry.second;
    if (!pod.containersGoOnlyByRuntime() || pod.spec.outsideKubeletTree) continue;
    const auto drop_if_gone = [&](const std::string& id) {
      auto path = kubeletNamer_->container(pod.spec.qos, uid, id);
      if (path.ok() && !fs_.exists({cpusetHierarchy_, *path})) tree.cgroups.erase(*path);
    };
    for (const auto& [name, c] : pod.containers) {
      if (!c.spec.id.empty()) drop_if_gone(c.spec.id);
    }
    drop_if_gone(pod.sandboxId);
  }
}

}  // namespace vri
