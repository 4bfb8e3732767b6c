#include "vri/vanished_tenants.h"

#include <set>

namespace vri {

bool VanishedTenants::missing(const std::string& tenant, Clock::TimePoint now,
                              std::map<std::string, Clock::TimePoint>& seen) {
  const auto known = missingSince_.find(tenant);
  const Clock::TimePoint since = known == missingSince_.end() ? now : known->second;
  seen[tenant] = since;
  return now - since >= grace_;
}

VanishedTenants::Due VanishedTenants::update(const LedgerState& state, const NodeScan& scan, Clock::TimePoint now) {
  std::map<std::string, std::set<std::string>> running;  // pod UID -> container ids with a cgroup
  for (const ScannedPod& pod : scan.pods) {
    auto& ids = running[pod.uid];
    for (const ScannedContainer& c : pod.containers) ids.insert(c.id);
  }
  std::set<std::string> running_vms;
  for (const ScannedVm& vm : scan.vms) {
    if (!vm.uuid.empty()) running_vms.insert(vm.uuid);
  }
  Due due;
  std::map<std::string, Clock::TimePoint> still_missing;  // what is missing now: the rest is forgotten
  for (const auto& [uid, pod] : state.pods) {
    // Outside kubelet's tree no scan sees it: only the runtime's removals (through the shim) end it.
    if (pod.spec.outsideKubeletTree) continue;
    const auto found = running.find(uid);
    if (found == running.end()) {
      if (missing(podTenant(uid), now, still_missing)) due.pods.push_back(uid);
      continue;
    }
    if (pod.containersGoOnlyByRuntime()) continue;
    for (const auto& [name, c] : pod.containers) {
      if (c.spec.id.empty() || found->second.count(c.spec.id)) continue;  // judged by the pod, or there
      if (missing(containerTenant(uid, name), now, still_missing)) due.containers.emplace_back(uid, name);
    }
  }
  for (const auto& [uuid, vm] : state.vms) {
    if (vm.defined || running_vms.count(uuid)) continue;
    if (missing(vmTenant(uuid), now, still_missing)) due.vms.push_back(uuid);
  }
  missingSince_ = std::move(still_missing);
  return due;
}

}  // namespace vri
