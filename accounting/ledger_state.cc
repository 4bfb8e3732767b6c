#include "accounting/ledger_state.h"

#include <algorithm>

namespace vri {

bool isDrainingOwner(const std::string& owner) { return parseTenant(owner).kind == TenantName::Kind::kDraining; }

LedgerTotals& LedgerTotals::operator+=(const LedgerTotals& o) {
  sharedDemandMilli += o.sharedDemandMilli;
  sharedTenants += o.sharedTenants;
  admittedMemoryBytes += o.admittedMemoryBytes;
  podRequestMilli += o.podRequestMilli;
  burstableRequestMilli += o.burstableRequestMilli;
  startedVmRequestMilli += o.startedVmRequestMilli;
  return *this;
}

LedgerTotals& LedgerTotals::operator-=(const LedgerTotals& o) {
  sharedDemandMilli -= o.sharedDemandMilli;
  sharedTenants -= o.sharedTenants;
  admittedMemoryBytes -= o.admittedMemoryBytes;
  podRequestMilli -= o.podRequestMilli;
  burstableRequestMilli -= o.burstableRequestMilli;
  startedVmRequestMilli -= o.startedVmRequestMilli;
  return *this;
}

CpuSet LedgerState::draining() const {
  CpuSet cpus;
  for (const auto& [owner, grant] : pool.grants()) {
    if (isDrainingOwner(owner)) cpus |= grant.all();
  }
  return cpus;
}

LedgerTotals podTotals(const PodRecord& pod) {
  LedgerTotals t;
  t.admittedMemoryBytes = podMemoryBytes(pod);
  // kubepods' requests: a pod outside kubelet's tree is not under kubepods (its demand on the shared pool counts).
  const bool underKubepods = !pod.spec.outsideKubeletTree;
  t.podRequestMilli = pod.spec.overheadCpuMilli;
  t.sharedDemandMilli = pod.spec.overheadCpuMilli;  // it runs in the pod's cgroup, on the shared pool
  for (const auto& [name, c] : pod.containers) {
    t.podRequestMilli += c.spec.cpuRequestMilli;
    // A container owed exclusive CPUs that holds none handed them on (it finished, as init containers
    // do; CRI does not say which are init containers): it runs no more and asks nothing of the shared pool.
    const bool handed_on = exclusiveCpusFor(pod.spec, c.spec) > 0;
    if (c.exclusive.empty() && !handed_on) {
      t.sharedDemandMilli += c.spec.cpuRequestMilli;
      ++t.sharedTenants;
    }
  }
  if (!underKubepods) t.podRequestMilli = 0;
  if (pod.spec.qos == QosClass::kBurstable) t.burstableRequestMilli = t.podRequestMilli;
  return t;
}

LedgerTotals vmTotals(const VmRecord& vm, bool started, int64_t sharedVcpuMilli, uint64_t memoryOverheadBytes) {
  LedgerTotals t;
  int shared_vcpus = 0;
  for (const auto& [vcpu, cpu] : vm.placement.vcpuCpus) shared_vcpus += cpu == VmCpuPlacement::kShared ? 1 : 0;
  t.sharedDemandMilli = shared_vcpus * sharedVcpuMilli;
  t.sharedTenants = t.sharedDemandMilli > 0 ? 1 : 0;
  t.admittedMemoryBytes = vm.spec.memoryBytes + memoryOverheadBytes;
  if (started && !vm.defined) {
    t.startedVmRequestMilli = t.sharedDemandMilli + static_cast<int64_t>(vm.placement.exclusive.count()) * 1000;
  }
  return t;
}

int sharedMinimumFor(const LedgerTotals& totals, const CpuPool& pool) {
  int minimum = 0;
  if (totals.sharedTenants > 0)
    minimum = static_cast<int>(std::max<int64_t>(1, (totals.sharedDemandMilli + 999) / 1000));
  return std::min(minimum, pool.shared().count());
}

NextState::NextState(StatePtr from, int64_t sharedVcpuMilli, uint64_t vmMemoryOverheadBytes)
    : before_(std::move(from)),
      next_(*before_),
      sharedVcpuMilli_(sharedVcpuMilli),
      vmMemoryOverheadBytes_(vmMemoryOverheadBytes) {}

LedgerTotals NextState::vmContribution(const VmRecord& vm, bool started) const {
  return vmTotals(vm, started, sharedVcpuMilli_, vmMemoryOverheadBytes_);
}

PersistentMap<std::string, RuntimeOwner> reindexRuntimeIds(PersistentMap<std::string, RuntimeOwner> ids,
                                                           const PodRecord* before, const PodRecord* after) {
  const auto each = [](const PodRecord& pod, const auto& visit) {
    if (!pod.sandboxId.empty()) visit(pod.sandboxId, RuntimeOwner{pod.spec.uid, ""});
    for (const auto& [name, c] : pod.containers) {
      if (!c.spec.id.empty()) visit(c.spec.id, RuntimeOwner{pod.spec.uid, name});
    }
  };
  if (before != nullptr) {
    each(*before, [&](const std::string& id, const RuntimeOwner& owner) {
      if (const RuntimeOwner* held = ids.find(id); held != nullptr && *held == owner) ids = ids.erase(id);
    });
  }
  if (after != nullptr)
    each(*after, [&](const std::string& id, const RuntimeOwner& owner) { ids = ids.set(id, owner); });
  return ids;
}

void NextState::putPod(PodRecord pod) {
  const std::string uid = pod.spec.uid;
  const PodRecord* old = next_.pods.find(uid);
  if (old != nullptr) next_.totals -= podTotals(*old);
  next_.runtimeIds = reindexRuntimeIds(std::move(next_.runtimeIds), old, &pod);
  next_.totals += podTotals(pod);
  next_.pods = next_.pods.set(uid, std::move(pod));
  delta_.pods.insert(uid);
  delta_.storedPods.insert(uid);
}

void NextState::erasePod(const std::string& uid) {
  const PodRecord* old = next_.pods.find(uid);
  if (old == nullptr) return;
  next_.totals -= podTotals(*old);
  next_.runtimeIds = reindexRuntimeIds(std::move(next_.runtimeIds), old, nullptr);
  next_.pods = next_.pods.erase(uid);
  delta_.pods.insert(uid);
  delta_.storedPods.insert(uid);
}

void NextState::putVm(VmRecord vm) {
  const std::string uuid = vm.spec.uuid;
  const bool started = next_.vmScopes.count(uuid) > 0;
  if (const VmRecord* old = next_.vms.find(uuid)) next_.totals -= vmContribution(*old, started);
  next_.totals += vmContribution(vm, started);
  next_.vms = next_.vms.set(uuid, std::move(vm));
  delta_.vms.insert(uuid);
  delta_.storedVms.insert(uuid);
}

void NextState::eraseVm(const std::string& uuid) {
  eraseVmScope(uuid);
  const VmRecord* old = next_.vms.find(uuid);
  if (old == nullptr) return;
  next_.totals -= vmContribution(*old, false);
  next_.vms = next_.vms.erase(uuid);
  delta_.vms.insert(uuid);
  delta_.storedVms.insert(uuid);
}

void NextState::setVmScope(const std::string& uuid, const CgroupPath& scope) {
  const VmRecord* vm = next_.vms.find(uuid);
  const bool was_started = next_.vmScopes.count(uuid) > 0;
  if (was_started && next_.vmScopes.at(uuid) == scope) return;
  if (vm != nullptr) {
    next_.totals -= vmContribution(*vm, was_started);
    next_.totals += vmContribution(*vm, true);
  }
  next_.vmScopes = next_.vmScopes.set(uuid, scope);
  delta_.vms.insert(uuid);
}

void NextState::eraseVmScope(const std::string& uuid) {
  if (!next_.vmScopes.count(uuid)) return;
  if (const VmRecord* vm = next_.vms.find(uuid)) {
    next_.totals -= vmContribution(*vm, true);
    next_.totals += vmContribution(*vm, false);
  }
  next_.vmScopes = next_.vmScopes.erase(uuid);
  delta_.vms.insert(uuid);
}

void NextState::seal() {
  next_.pool.followSharedDemand(sharedMinimumFor(next_.totals, next_.pool));
  ++next_.sequence;
}

}  // namespace vri
