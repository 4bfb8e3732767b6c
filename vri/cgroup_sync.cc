#include "vri/cgroup_sync.h"

#include <algorithm>

#include "cgroup-model/libvirt_namer.h"
#include "vri/ledger_tree.h"

namespace vri {

Result<std::unique_ptr<CgroupBackend>> backendForHost(const CgroupFs& fs, const std::string& cgroupRoot,
                                                      std::optional<CgroupVersion> version,
                                                      const std::vector<std::string>& v1Controllers) {
  VRI_ASSIGN_OR_RETURN(CgroupMounts mounts, readCgroupMounts(fs));
  std::string unified_controllers;
  if (!mounts.unified.empty()) {
    auto controllers = fs.read(CgroupDir{"", CgroupPath{}}, "cgroup.controllers");
    if (controllers.ok()) unified_controllers = *controllers;
  }
  VRI_ASSIGN_OR_RETURN(CgroupVersion chosen, chooseCgroupVersion(mounts, unified_controllers, version));
  if (chosen == CgroupVersion::kV2) return makeV2Backend();
  std::map<std::string, std::string> hierarchies;
  for (const std::string& controller : v1Controllers) {
    auto hierarchy = v1Hierarchy(mounts, controller, cgroupRoot);
    if (hierarchy.ok()) hierarchies[controller] = *hierarchy;
  }
  for (const char* required : {"cpuset", "cpu"}) {
    if (!hierarchies.count(required))
      return Error::failedPrecondition(std::string("no cgroup v1 hierarchy mounted for the ") + required +
                                       " controller below " + cgroupRoot);
  }
  return makeV1Backend(std::move(hierarchies));
}

Result<NodeScan> CgroupSync::scan() {
  VRI_ASSIGN_OR_RETURN(NodeScan scan, scanNode(fs_, *backend_, layout_));
  std::lock_guard lock(scopesMutex_);
  for (const ScannedVm& vm : scan.vms) {
    if (!vm.uuid.empty()) vmScopes_[vm.uuid] = vm.scope.path;
  }
  return scan;
}

Result<CgroupPath> CgroupSync::vmStarted(const std::string& uuid, int qemuPid) {
  if (qemuPid <= 0) return Error::invalidArgument("qemu_pid: must be a process id, got " + std::to_string(qemuPid));
  VRI_ASSIGN_OR_RETURN(
      std::string cgroups,
      fs_.readProc(std::to_string(qemuPid) + "/cgroup").context("qemu_pid " + std::to_string(qemuPid)));
  const std::string controller = backend_->version() == CgroupVersion::kV1 ? "cpuset" : "";
  VRI_ASSIGN_OR_RETURN(CgroupPath scope, vmScopeFromProcCgroup(cgroups, controller, layout_.machinePartition)
                                             .context("qemu_pid " + std::to_string(qemuPid)));
  std::lock_guard lock(scopesMutex_);
  vmScopes_[uuid] = scope;
  return scope;
}

void CgroupSync::forgetVm(const std::string& uuid) {
  std::lock_guard lock(scopesMutex_);
  vmScopes_.erase(uuid);
}

std::optional<CgroupPath> CgroupSync::vmScope(const std::string& uuid) const {
  std::lock_guard lock(scopesMutex_);
  const auto it = vmScopes_.find(uuid);
  if (it == vmScopes_.end()) return std::nullopt;
  return it->second;
}

Result<SyncResult> CgroupSync::apply(const Ledger& ledger, bool withDrift, bool dryRun) {
  std::lock_guard apply_lock(applyMutex_);
  const LedgerSnapshot snapshot = ledger.snapshot();
  std::map<std::string, CgroupPath> scopes;
  {
    std::lock_guard lock(scopesMutex_);
    scopes = vmScopes_;
  }
  const LedgerTreeInputs inputs{ledger.topology(), layout_, allocatable_, sharedVcpuMilli_, scopes};
  VRI_ASSIGN_OR_RETURN(DesiredTree desired, desiredTreeFromLedger(snapshot, inputs));
  if (backend_->version() == CgroupVersion::kV1) {
    const auto managed = [&](const char* controller) {
      return std::find(controllers_.begin(), controllers_.end(), controller) != controllers_.end();
    };
    for (auto& [path, spec] : desired.cgroups) {
      if (!managed("memory")) spec.settings.memoryMax.reset();
      if (!managed("hugetlb")) spec.settings.hugetlbMax.clear();
      if (!managed("pids")) spec.settings.pidsMax.reset();
    }
  }
  SyncResult result;
  result.shared = snapshot.shared;
  if (withDrift) {
    VRI_ASSIGN_OR_RETURN(result.drift, detectDrift(fs_, *backend_, desired));
  }
  CgroupApplier applier(fs_, *backend_);
  if (dryRun) {
    VRI_ASSIGN_OR_RETURN(result.operations, applier.plan(desired));
  } else {
    VRI_ASSIGN_OR_RETURN(result.operations, applier.apply(desired));
  }
  return result;
}

}  // namespace vri
