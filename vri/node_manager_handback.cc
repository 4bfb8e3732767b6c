// NodeManager::handBack: the node returned to kubelet's static CPU manager with every workload
// running. kubelet starts on a checkpoint that holds what VRI placed, validates it (every online
// CPU in the default set or one container's, the reserved CPUs in the default set, no overlap) and
// from then on writes each container's cpuset from it every reconcile period: exclusive containers
// their CPUs, all others the default set, which equals VRI's shared pool when no VM holds CPUs.
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/tenant_id.h"
#include "base/owned_path.h"
#include "base/quote.h"
#include "vri/node_manager.h"

namespace vri {

namespace {

constexpr size_t kMaxCheckpointBytes = 1 << 20;

// kubelet's checkpoint of what the ledger holds: each exclusive container's CPUs under its pod's
// UID and its name, every other online CPU in the default set (the reserved CPUs among them, as
// kubelet's static policy keeps them). Refused while a VM holds exclusive CPUs: kubelet's
// checkpoint has no place for them, and its static policy would hand them to pods.
Result<CpuManagerCheckpoint> checkpointOf(const LedgerState& state) {
  std::string vms;
  for (const auto& [owner, grant] : state.grants()) {
    if (!owner.starts_with("vm/") || grant.all().empty()) continue;
    const std::string uuid = owner.substr(3, owner.find('/', 3) - 3);  // "vm/<uuid>[/…]"; npos - 3 takes the rest
    const VmRecord* vm = state.vm(uuid);
    vms += std::string(vms.empty() ? "" : ", ") + (vm != nullptr ? vm->spec.cpu.name : uuid) + " (" +
           grant.all().format() + ")";
  }
  if (!vms.empty())
    return Error::failedPrecondition(
        "VMs hold exclusive CPUs: " + vms +
        ". kubelet's static policy would give them to pods; stop those VMs, or make their vCPUs shared, first");
  if (!state.draining().empty())
    return Error::failedPrecondition("CPUs " + state.draining().format() +
                                     " wait for cgroup writes to land; hand back after a reconcile that repairs them");
  CpuManagerCheckpoint cp;
  cp.policyName = "static";
  CpuSet exclusive;
  for (const auto& [uid, pod] : state.pods) {
    for (const auto& [name, container] : pod.containers) {
      if (container.exclusive.empty()) continue;
      cp.entries[uid][name] = container.exclusive.format();
      exclusive = exclusive | container.exclusive;
    }
  }
  cp.defaultCpuSet = (state.pool.topology().onlineCpus() - exclusive).format();
  return cp;
}

// The file kubelet finds there: none, its own for policy none, or one for the static policy that
// says what this hand-back would (an earlier one); any other static checkpoint is refused.
Result<void> checkExistingCheckpoint(const std::string& path, const std::string& text) {
  if (::access(path.c_str(), F_OK) != 0) return {};
  VRI_ASSIGN_OR_RETURN(std::string existing,
                       readOwnedFile(path, "kubelet's CPU manager checkpoint", kMaxCheckpointBytes));
  VRI_ASSIGN_OR_RETURN(std::string policy, checkpointPolicyName(existing, path));
  if (policy.empty() || policy == "none" || existing == text) return {};
  return Error::failedPrecondition(path + " already holds a checkpoint of policy " + quoteForMessage(policy) +
                                   " that differs from the ledger's: a kubelet with that policy ran since; "
                                   "remove it (with kubelet stopped) if it is stale");
}

}  // namespace

Result<KubeletHandBack> NodeManager::handBack(const std::string& kubeletRootDir, bool dryRun,
                                              const std::string& written) {
  // Not refused once handed back: a hand-back whose cgroup writes failed is tried again whole.
  if (halted()) return Error(ErrorCode::kUnavailable, "vrid takes no decisions: see vrid's log (halted)");
  if (kubeletRootDir.empty() || kubeletRootDir.front() != '/')
    return Error::invalidArgument("kubelet_root_dir: want kubelet's --root-dir, an absolute path; got " +
                                  quoteForMessage(kubeletRootDir));
  struct stat dir {};
  if (::stat(kubeletRootDir.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
    return Error::notFound("kubelet_root_dir " + kubeletRootDir + " is not a directory: is it kubelet's --root-dir?");
  VRI_TRY(refuseWritableByOthers(kubeletRootDir, "kubelet_root_dir"));
  Ledger::Writer writer(ledger_);
  const StatePtr now = writer.current();
  KubeletHandBack out;
  VRI_ASSIGN_OR_RETURN(out.checkpoint, checkpointOf(*now));
  out.checkpointPath = kubeletRootDir + "/cpu_manager_state";
  out.checkpointText = encodeCheckpoint(out.checkpoint);
  // The caller writes the checkpoint before the commit (vrid's unit may not write kubelet's
  // directory): a hand-back that stops after it has changed no cgroup, and a second one finds the
  // same file.
  if (!dryRun && written != out.checkpointText)
    return Error(ErrorCode::kAborted,
                 "the checkpoint written is not what the ledger holds now (a decision came "
                 "between): compose it again");
  VRI_TRY(checkExistingCheckpoint(out.checkpointPath, out.checkpointText));
  if (dryRun) return out;
  VRI_ASSIGN_OR_RETURN(std::string onDisk,
                       readOwnedFile(out.checkpointPath, "kubelet's CPU manager checkpoint", kMaxCheckpointBytes));
  if (onDisk != written)
    return Error::failedPrecondition(out.checkpointPath + " does not hold the checkpoint: write it there first");
  handedBack_ = true;
  const Result<int> writes = sync_.handBackToKubelet(writer, *now, now->pool.topology().onlineCpus());
  if (!writes.ok()) {
    log_.warning("hand-back: kubelet's cgroups kept VRI's cpusets: " + writes.error().message());
    return Error(writes.error().code(), "kubelet's cgroups kept VRI's cpusets: " + writes.error().message());
  }
  out.cgroupWrites = *writes;
  log_.info("handed the node back to kubelet's CPU manager: " + out.checkpointPath + " (" +
            std::to_string(out.checkpoint.entries.size()) + " pods with exclusive CPUs, default set " +
            out.checkpoint.defaultCpuSet + "), " + std::to_string(out.cgroupWrites) +
            " cgroup writes; every decision is refused from now on");
  return out;
}

}  // namespace vri
