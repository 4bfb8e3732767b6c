// CgroupSync::view: the tree for vrictl's `tree`, kept apart from the write paths.
#include "accounting/tenant_id.h"
#include "cgroup-model/drift.h"
#include "vri/cgroup_sync.h"

namespace vri {

Result<TreeView> CgroupSync::view(const LedgerState& state, bool compare) const {
  TreeView view;
  VRI_ASSIGN_OR_RETURN(view.desired, reconciledTree(state));
  for (const auto& [path, spec] : view.desired.cgroups) {
    VRI_ASSIGN_OR_RETURN(view.files[path], backend_->files(spec.settings));
  }
  // Whose each cgroup is, through the same namers that name them for writes.
  const auto own = [&](const Result<CgroupPath>& path, const std::string& tenant) {
    if (path.ok() && view.desired.cgroups.count(*path)) view.tenants[*path] = tenant;
  };
  for (const auto& [uid, pod] : state.pods) {
    if (pod.spec.outsideKubeletTree) continue;
    own(kubeletNamer_->pod(pod.spec.qos, uid), podTenant(uid));
    if (!pod.sandboxId.empty()) own(kubeletNamer_->container(pod.spec.qos, uid, pod.sandboxId), podTenant(uid));
    for (const auto& [name, c] : pod.containers) {
      if (!c.spec.id.empty()) own(kubeletNamer_->container(pod.spec.qos, uid, c.spec.id), containerTenant(uid, name));
    }
  }
  for (const auto& [uuid, scope] : state.vmScopes) {
    // Paths order component by component: a scope's subtree follows it.
    for (auto it = view.desired.cgroups.lower_bound(scope);
         it != view.desired.cgroups.end() && it->first.isWithin(scope); ++it)
      view.tenants[it->first] = vmTenant(uuid);
  }
  if (compare) {
    view.compared = true;
    VRI_ASSIGN_OR_RETURN(view.drift, detectDrift(fs_, *backend_, view.desired));
  }
  return view;
}

}  // namespace vri
