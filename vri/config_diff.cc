#include "vri/config_diff.h"

#include <set>

#include "base/owned_path.h"
#include "vri/kubelet_config.h"
#include "vri/ledger_config.h"

namespace vri {

bool isPlacementPolicyOption(const std::string& option) {
  static const std::set<std::string> kPolicy = {"reserved_cpus",
                                                "reserved_cpu_count",
                                                "strict_cpu_reservation",
                                                "system_reserved_cpu",
                                                "kube_reserved_cpu",
                                                "system_reserved_memory",
                                                "kube_reserved_memory",
                                                "eviction_hard_memory",
                                                "full_pcpus_only",
                                                "distribute_cpus_across_numa",
                                                "align_by_socket",
                                                "prefer_align_cpus_by_uncorecache",
                                                "numa_fit",
                                                "topology_manager_policy",
                                                "topology_manager_scope",
                                                "prefer_closest_numa_nodes",
                                                "pin_guaranteed_memory",
                                                "vm_memory_overhead",
                                                "shared_vcpu_request"};
  return kPolicy.count(option) > 0;
}

Result<ConfigDiff> diffConfig(const std::map<std::string, std::string>& running, const DaemonConfig& candidate,
                              const LedgerState& now, std::shared_ptr<const Topology> topology) {
  ConfigDiff diff;
  for (const ConfigOption& option : configOptions()) {
    const std::string after = option.get(candidate);
    const auto before = running.find(option.name);
    if (before == running.end() || before->second == after) continue;
    ConfigSettingChange change{option.name, before->second, after, ConfigSettingChange::TakesEffect::kRestart};
    if (isPlacementPolicyOption(option.name)) {
      change.takesEffect = ConfigSettingChange::TakesEffect::kApply;
      diff.policyChanges = true;
    } else if (option.reloadable) {
      change.takesEffect = ConfigSettingChange::TakesEffect::kReload;
    }
    diff.settings.push_back(std::move(change));
  }
  if (diff.policyChanges) {
    VRI_ASSIGN_OR_RETURN(NodeAllocatable allocatable, computeAllocatable(*topology, candidate.reservations));
    VRI_ASSIGN_OR_RETURN(diff.plan, planConfigChange(now, topology, ledgerConfigOf(candidate, allocatable)));
  }
  diff.kubeletConfig = candidate.kubeletConfig;
  if (!candidate.kubeletConfig.empty()) {
    VRI_ASSIGN_OR_RETURN(std::string text, readOwnedFile(candidate.kubeletConfig, "kubelet_config", size_t{1} << 20));
    VRI_ASSIGN_OR_RETURN(KubeletSettings kubelet, parseKubeletConfig(text, candidate.kubeletConfig));
    diff.kubelet = kubeletMismatches(candidate, kubelet);
  }
  return diff;
}

}  // namespace vri
