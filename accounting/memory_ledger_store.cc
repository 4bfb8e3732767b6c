#include "accounting/ledger_store.h"

namespace vri {

Result<void> MemoryLedgerStore::apply(const LedgerChange& change) {
  for (const PodRecord& pod : change.putPods) stored_.pods[pod.spec.uid] = pod;
  for (const std::string& uid : change.deletePods) stored_.pods.erase(uid);
  for (const VmRecord& vm : change.putVms) stored_.vms[vm.spec.uuid] = vm;
  for (const std::string& uuid : change.deleteVms) stored_.vms.erase(uuid);
  for (const auto& [key, value] : change.meta) stored_.meta[key] = value;
  return {};
}

Result<void> MemoryLedgerStore::setMeta(const std::string& key, const std::string& value) {
  stored_.meta[key] = value;
  return {};
}

}  // namespace vri
