// VriService's calls on the node's configuration: the hand-back to kubelet's CPU manager, and a
// configuration file's difference from the running one, or its application (vrictl config).
#include "vri/api_convert.h"
#include "vri/config_diff.h"
#include "vri/vri_service.h"

namespace vri {

Result<void> VriService::handBack(const v1::HandBackRequest& request, v1::HandBackReply& reply) {
  KubeletHandBackRequest handBack;
  handBack.kubeletRootDir = request.kubelet_root_dir();
  if (handBack.kubeletRootDir.empty()) handBack.kubeletRootDir = node_.facts().options["kubelet_root_dir"];
  if (handBack.kubeletRootDir.empty())
    return Error::invalidArgument("kubelet_root_dir: vrid's is empty; name kubelet's --root-dir in the request");
  handBack.kubeletConfig = request.kubelet_config();
  if (handBack.kubeletConfig.empty()) handBack.kubeletConfig = node_.facts().options["kubelet_config"];
  handBack.dryRun = request.dry_run();
  handBack.writtenCpu = request.checkpoint();
  handBack.writtenMemory = request.memory_checkpoint();
  VRI_ASSIGN_OR_RETURN(KubeletHandBack handed, node_.handBack(handBack));
  reply.set_checkpoint_path(handed.checkpointPath);
  reply.set_checkpoint(handed.checkpointText);
  reply.set_default_cpus(handed.checkpoint.defaultCpuSet);
  int exclusive = 0;
  for (const auto& [pod, containers] : handed.checkpoint.entries) exclusive += static_cast<int>(containers.size());
  reply.set_exclusive_containers(exclusive);
  reply.set_cgroup_writes(handed.cgroupWrites);
  reply.set_memory_checkpoint_path(handed.memoryCheckpointPath);
  reply.set_memory_checkpoint(handed.memoryCheckpointText);
  int withMemory = 0;
  for (const auto& [pod, containers] : handed.memoryCheckpoint.entries)
    withMemory += static_cast<int>(containers.size());
  reply.set_memory_containers(withMemory);
  reply.set_kubelet_config(handBack.kubeletConfig);
  return {};
}

Result<ConfigControl*> VriService::configControl() const {
  if (config_ == nullptr)
    return Error::failedPrecondition("this vrid was started without a configuration file to read again");
  return config_;
}

Result<void> VriService::diffConfig(const v1::DiffConfigRequest& request, v1::ConfigDiffReply& reply) {
  DaemonConfig candidate = defaultConfig();
  std::string origin = request.origin().empty() ? "config" : request.origin();
  if (request.configuration_file()) {
    VRI_ASSIGN_OR_RETURN(ConfigControl * control, configControl());
    VRI_ASSIGN_OR_RETURN(candidate, control->readConfiguration(origin));
  } else {
    VRI_TRY(applyConfigText(candidate, request.config_text(), origin));
  }
  const StatePtr now = node_.state();
  VRI_ASSIGN_OR_RETURN(ConfigDiff diff,
                       vri::diffConfig(node_.facts().options, candidate, *now, node_.sharedTopology()));
  fillConfigDiff(diff, reply);
  reply.set_origin(origin);
  return {};
}

Result<void> VriService::applyConfig(const v1::ApplyConfigRequest& request, v1::ConfigDiffReply& reply) {
  VRI_ASSIGN_OR_RETURN(ConfigControl * control, configControl());
  std::string origin;
  VRI_ASSIGN_OR_RETURN(const DaemonConfig next, control->readConfiguration(origin));
  VRI_ASSIGN_OR_RETURN(const ConfigDiff diff, control->applyConfiguration(next, request.dry_run()));
  fillConfigDiff(diff, reply);
  reply.set_origin(origin);
  reply.set_applied(!request.dry_run());
  return {};
}

}  // namespace vri
