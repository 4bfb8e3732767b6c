// NodeManager::handBack: the node returned to kubelet's static CPU manager (and its static memory
// manager) with every workload running. kubelet starts on checkpoints that hold what VRI placed,
// validates them (the CPU manager: every online CPU in the default set or one container's, the
// reserved CPUs in the default set, no overlap; the memory manager: its machine state computed again
// from the node and the entries) and from then on writes each container's cpuset from them every
// reconcile period: exclusive containers their CPUs, all others the default set, which equals VRI's
// shared pool when no VM holds CPUs.
#include <sys/stat.h>
#include <unistd.h>

#include "accounting/tenant_id.h"
#include "base/owned_path.h"
#include "base/quote.h"
#include "vri/kubelet_handback_checkpoints.h"
#include "vri/node_manager.h"

namespace vri {

namespace {

constexpr size_t kMaxCheckpointBytes = 1 << 20;

// The file kubelet finds there: none, its own for policy none, or one that says what this hand-back
// would (an earlier one); any other checkpoint of a static policy is refused.
Result<void> checkExistingCheckpoint(const std::string& path, const std::string& text, const char* what,
                                     const char* none) {
  if (::access(path.c_str(), F_OK) != 0) return {};
  VRI_ASSIGN_OR_RETURN(std::string existing, readOwnedFile(path, what, kMaxCheckpointBytes));
  VRI_ASSIGN_OR_RETURN(std::string policy, checkpointPolicyName(existing, path));
  if (policy.empty() || policy == none || existing == text) return {};
  return Error::failedPrecondition(path + " already holds a checkpoint of policy " + quoteForMessage(policy) +
                                   " that differs from the ledger's: a kubelet with that policy ran since; "
                                   "remove it (with kubelet stopped) if it is stale");
}

// The configuration kubelet will start with, and what it must say for kubelet to take the checkpoints.
Result<KubeletSettings> targetConfiguration(const std::string& path) {
  VRI_ASSIGN_OR_RETURN(std::string text, readOwnedFile(path, "kubelet's configuration", kMaxCheckpointBytes));
  VRI_ASSIGN_OR_RETURN(KubeletSettings kubelet, parseKubeletConfig(text, path));
  if (kubelet.cpuManagerPolicy != "static")
    return Error::failedPrecondition(
        path + " says cpuManagerPolicy " + quoteForMessage(kubelet.cpuManagerPolicy) +
        ": kubelet would start without the hand-back's checkpoint (and refuse it). Set cpuManagerPolicy: static "
        "there first (kubelet reads it only when it starts)");
  if (kubelet.memoryManagerPolicy != "Static" && kubelet.memoryManagerPolicy != "None")
    return Error::failedPrecondition(path + " says memoryManagerPolicy " +
                                     quoteForMessage(kubelet.memoryManagerPolicy) + ": want Static or None");
  return kubelet;
}

}  // namespace

Result<KubeletHandBack> NodeManager::handBack(const KubeletHandBackRequest& request) {
  // Not refused once handed back: a hand-back whose cgroup writes failed is tried again whole.
  if (halted()) return Error(ErrorCode::kUnavailable, "vrid takes no decisions: see vrid's log (halted)");
  const std::string& rootDir = request.kubeletRootDir;
  if (rootDir.empty() || rootDir.front() != '/')
    return Error::invalidArgument("kubelet_root_dir: want kubelet's --root-dir, an absolute path; got " +
                                  quoteForMessage(rootDir));
  struct stat dir {};
  if (::stat(rootDir.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode))
    return Error::notFound("kubelet_root_dir " + rootDir + " is not a directory: is it kubelet's --root-dir?");
  VRI_TRY(refuseWritableByOthers(rootDir, "kubelet_root_dir"));
  std::optional<KubeletSettings> kubelet;
  if (!request.kubeletConfig.empty()) {
    VRI_ASSIGN_OR_RETURN(kubelet, targetConfiguration(request.kubeletConfig));
  }
  Ledger::Writer writer(ledger_);
  const StatePtr now = writer.current();
  KubeletHandBack out;
  VRI_ASSIGN_OR_RETURN(out.checkpoint, cpuCheckpointOf(*now, kubelet ? &*kubelet : nullptr));
  out.checkpointPath = rootDir + "/cpu_manager_state";
  out.checkpointText = encodeCheckpoint(out.checkpoint);
  if (kubelet && kubelet->memoryManagerPolicy == "Static") {
    VRI_ASSIGN_OR_RETURN(out.memoryCheckpoint, memoryCheckpointOf(*now, *kubelet));
    out.memoryCheckpointPath = rootDir + "/memory_manager_state";
    out.memoryCheckpointText = encodeMemoryCheckpoint(out.memoryCheckpoint);
  }
  // The caller writes the checkpoints before the commit (vrid's unit may not write kubelet's
  // directory): a hand-back that stops after it has changed no cgroup, and a second one finds the
  // same files.
  if (!request.dryRun &&
      (request.writtenCpu != out.checkpointText || request.writtenMemory != out.memoryCheckpointText))
    return Error(ErrorCode::kAborted,
                 "the checkpoints written are not what the ledger holds now (a decision came "
                 "between): compose them again");
  VRI_TRY(checkExistingCheckpoint(out.checkpointPath, out.checkpointText, "kubelet's CPU manager checkpoint", "none"));
  if (!out.memoryCheckpointPath.empty())
    VRI_TRY(checkExistingCheckpoint(out.memoryCheckpointPath, out.memoryCheckpointText,
                                    "kubelet's memory manager checkpoint", "None"));
  if (request.dryRun) return out;
  for (const auto& [path, text] :
       {std::pair{out.checkpointPath, out.checkpointText}, {out.memoryCheckpointPath, out.memoryCheckpointText}}) {
    if (path.empty()) continue;
    VRI_ASSIGN_OR_RETURN(std::string onDisk, readOwnedFile(path, "kubelet's checkpoint", kMaxCheckpointBytes));
    if (onDisk != text) return Error::failedPrecondition(path + " does not hold the checkpoint: write it there first");
  }
  handedBack_ = true;
  const Result<int> writes = sync_.handBackToKubelet(writer, *now, now->pool.topology().onlineCpus());
  if (!writes.ok()) {
    log_.warning("hand-back: kubelet's cgroups kept VRI's cpusets: " + writes.error().message());
    return Error(writes.error().code(), "kubelet's cgroups kept VRI's cpusets: " + writes.error().message());
  }
  out.cgroupWrites = *writes;
  std::string memory;
  if (!out.memoryCheckpointPath.empty()) {
    size_t containers = 0;
    for (const auto& [pod, byName] : out.memoryCheckpoint.entries) containers += byName.size();
    memory = " and " + out.memoryCheckpointPath + " (" + std::to_string(containers) + " containers of Guaranteed pods)";
  }
  log_.info("handed the node back to kubelet's CPU manager: " + out.checkpointPath + " (" +
            std::to_string(out.checkpoint.entries.size()) + " pods with exclusive CPUs, default set " +
            out.checkpoint.defaultCpuSet + ")" + memory + ", " + std::to_string(out.cgroupWrites) +
            " cgroup writes; every decision is refused from now on");
  return out;
}

}  // namespace vri
