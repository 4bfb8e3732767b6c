#include "accounting/ledger_validation.h"

#include <algorithm>
#include <set>

namespace vri {

namespace {

// A cgroup confined to fewer CPUs than the whole shared pool holds them exclusively.
CpuSet exclusiveOf(const ScannedCgroup& cgroup, const CpuSet& shared) {
  if (!cgroup.settings.cpus || cgroup.settings.cpus->empty() || shared.isSubsetOf(*cgroup.settings.cpus)) return {};
  return *cgroup.settings.cpus;
}

ContainerSpec specFromCgroup(const ScannedContainer& container) {
  ContainerSpec spec;
  spec.name = container.id;
  spec.id = container.id;
  const CgroupSettings& s = container.cgroup.settings;
  // kubelet's shares = milli * 1024 / 1000, turned back; 2 shares is BestEffort's "no request".
  if (s.shares) spec.cpuRequestMilli = milliCpuFromShares(*s.shares);
  if (s.cpuMax && s.cpuMax->quotaUs)
    spec.cpuLimitMilli = *s.cpuMax->quotaUs * 1000 / static_cast<int64_t>(s.cpuMax->periodUs);
  if (s.memoryMax && s.memoryMax->value) spec.memoryLimitBytes = s.memoryMax->value;
  return spec;
}

// The NUMA nodes a cgroup's cpuset.mems binds it to, when fewer than the node's (kubelet's memory
// manager, or VRI's pinning, put it there); empty when it may use every node.
std::vector<int> memoryNodesOf(const ScannedCgroup& cgroup, const Topology& topology) {
  if (!cgroup.settings.mems || cgroup.settings.mems->empty()) return {};
  std::vector<int> bound;
  bool everyNode = true;
  for (const NumaNode& node : topology.numaNodes()) {
    if (cgroup.settings.mems->contains(node.id))
      bound.push_back(node.id);
    else
      everyNode = false;
  }
  return everyNode ? std::vector<int>() : bound;
}

void releaseVanished(Ledger& ledger, const NodeScan& scan, ValidationReport& report) {
  const StatePtr snapshot = ledger.state();
  std::map<std::string, std::set<std::string>> running;  // pod UID -> container ids
  for (const ScannedPod& pod : scan.pods) {
    auto& ids = running[pod.uid];
    for (const ScannedContainer& c : pod.containers) ids.insert(c.id);
  }
  for (const auto& [uid, pod] : snapshot->pods) {
    // Outside kubelet's tree no scan sees it: the runtime's removals end it, and the shim's ledger sync.
    if (pod.spec.outsideKubeletTree) continue;
    const auto found = running.find(uid);
    if (found == running.end()) {
      if (ledger.apply(&Ledger::decideReleasePod, uid, ReleaseGuard{}).ok())
        report.released.push_back("pod " + pod.spec.name + ": its cgroups are gone; released");
      continue;
    }
    if (pod.containersGoOnlyByRuntime()) continue;
    size_t released = 0;
    for (const auto& [name, c] : pod.containers) {
      if (c.spec.id.empty() || found->second.count(c.spec.id)) continue;
      if (ledger.apply(&Ledger::decideReleaseContainer, uid, name, ReleaseGuard{}).ok()) {
        ++released;
        report.released.push_back("container " + pod.spec.name + "/" + name + ": its cgroup is gone; released");
      }
    }
    // Its last containers gone (an admit cut off before its writes, with only the pod's cgroup made): nothing
    // is left of the pod either, and no runtime will release an empty pod it never ran.
    if (released > 0 && released == pod.containers.size() &&
        ledger.apply(&Ledger::decideReleasePod, uid, ReleaseGuard{}).ok())
      report.released.push_back("pod " + pod.spec.name + ": none of its containers is left; released");
  }
  std::set<std::string> running_vms;
  for (const ScannedVm& vm : scan.vms) running_vms.insert(vm.uuid);
  for (const auto& [uuid, vm] : snapshot->vms) {
    if (running_vms.count(uuid) || vm.defined) continue;  // a reservation waits for its VM to start
    report.waiting.push_back("VM " + vm.spec.cpu.name +
                             ": admitted, QEMU not running (yet); kept until it starts or the release grace passes");
  }
}

// The shared pool as the node runs it: the cpuset most containers and vCPU
// groups share (ties: the widest), or the ledger's when nothing runs.
CpuSet observedSharedPool(const NodeScan& scan, const CpuSet& fallback) {
  std::map<std::string, std::pair<int, CpuSet>> seen;
  const auto count = [&](const ScannedCgroup& cgroup) {
    if (!cgroup.settings.cpus || cgroup.settings.cpus->empty()) return;
    auto& entry = seen[cgroup.settings.cpus->format()];
    ++entry.first;
    entry.second = *cgroup.settings.cpus;
  };
  for (const ScannedPod& pod : scan.pods) {
    for (const ScannedContainer& c : pod.containers) count(c.cgroup);
  }
  for (const ScannedVm& vm : scan.vms) {
    for (const ScannedThreadGroup& g : vm.threadGroups) count(g.cgroup);
  }
  const std::pair<int, CpuSet>* best = nullptr;
  for (const auto& [text, entry] : seen) {
    if (best == nullptr || entry.first > best->first ||
        (entry.first == best->first && entry.second.count() > best->second.count())) {
      best = &entry;
    }
  }
  return best == nullptr ? fallback : best->second;
}

void adoptPods(Ledger& ledger, const NodeScan& scan, const CpuSet& shared, ValidationReport& report) {
  const StatePtr snapshot = ledger.state();
  for (const ScannedPod& pod : scan.pods) {
    const auto known = snapshot->pods.find(pod.uid);
    for (const ScannedContainer& container : pod.containers) {
      if (known != nullptr && container.id == known->sandboxId) continue;  // the sandbox is not a container
      if (known != nullptr) {
        const bool seen = std::any_of(known->containers.begin(), known->containers.end(),
                                      [&](const auto& entry) { return entry.second.spec.id == container.id; });
        if (seen) continue;
        // A pod run through the CRI shim: its containers come and go by the runtime, which knows their
        // names. One the ledger does not hold was released (its cgroup not yet removed) or is the shim's
        // to adopt under its own name; taken here it would come back named by its runtime id.
        if (known->containersGoOnlyByRuntime()) {
          report.waiting.push_back("container " + container.id + " of pod " + pod.uid +
                                   ": not adopted; the pod's runtime shim adopts or removes it");
          continue;
        }
      }
      const PodSpec spec{pod.uid, known != nullptr ? known->spec.name : "adopted/" + pod.uid, pod.qos, 0, 0};
      const CpuSet exclusive = exclusiveOf(container.cgroup, shared);
      auto adopted = ledger.apply(&Ledger::decideAdoptContainer, spec, specFromCgroup(container), exclusive,
                                  memoryNodesOf(container.cgroup, ledger.topology()));
      const std::string what = "container " + container.id + " of pod " + pod.uid;
      if (adopted.ok()) {
        report.adopted.push_back(what + ": adopted" +
                                 (exclusive.empty() ? " in the shared pool" : " with CPUs " + exclusive.format()));
      } else {
        report.unresolved.push_back(what + ": not adopted: " + adopted.error().message());
      }
    }
  }
}

void adoptVms(Ledger& ledger, const NodeScan& scan, const CpuSet& shared, ValidationReport& report) {
  const StatePtr snapshot = ledger.state();
  for (const ScannedVm& vm : scan.vms) {
    const std::string scope = vm.scope.path.str();
    if (vm.uuid.empty()) {
      report.unresolved.push_back("VM scope " + scope + ": no UUID found; not adopted");
      continue;
    }
    if (snapshot->vms.count(vm.uuid)) continue;
    VmSpec spec;
    spec.uuid = vm.uuid;
    spec.cpu.name = vm.scope.path.leaf();
    VmCpuPlacement placement;
    for (const ScannedThreadGroup& group : vm.threadGroups) {
      const CpuSet exclusive = exclusiveOf(group.cgroup, shared);
      const int cpu = exclusive.count() == 1 ? exclusive.first() : VmCpuPlacement::kShared;
      if (group.kind == ScannedThreadGroup::Kind::kVcpu) {
        placement.vcpuCpus[group.index] = cpu;
        if (cpu != VmCpuPlacement::kShared) spec.cpu.mixedDedicatedVcpus.push_back(group.index);
      } else if (group.kind == ScannedThreadGroup::Kind::kEmulator) {
        placement.emulatorCpus = exclusive;
      } else if (group.index >= 1) {
        placement.iothreadCpus[static_cast<IothreadId>(group.index)] = cpu;
      }
      placement.exclusive |= exclusive;
    }
    // The vCPUs and iothreads that have groups are the ones that run, by id.
    if (placement.vcpuCpus.empty()) placement.vcpuCpus[0] = VmCpuPlacement::kShared;
    for (const auto& [vcpu, cpu] : placement.vcpuCpus) spec.cpu.onlineVcpus.push_back(vcpu);
    spec.cpu.vcpus = static_cast<int>(placement.vcpuCpus.size());
    std::sort(spec.cpu.mixedDedicatedVcpus.begin(), spec.cpu.mixedDedicatedVcpus.end());
    const size_t dedicated = spec.cpu.mixedDedicatedVcpus.size();
    spec.cpu.cpuPolicy = dedicated == 0                                     ? VmCpuPolicy::kShared
                         : dedicated == static_cast<size_t>(spec.cpu.vcpus) ? VmCpuPolicy::kDedicated
                                                                            : VmCpuPolicy::kMixed;
    if (spec.cpu.cpuPolicy != VmCpuPolicy::kMixed) spec.cpu.mixedDedicatedVcpus.clear();
    spec.cpu.emulatorPolicy =
        placement.emulatorCpus.empty() ? HelperThreadPolicy::kShared : HelperThreadPolicy::kIsolate;
    for (const auto& [id, cpu] : placement.iothreadCpus) spec.cpu.iothreadIds.push_back(id);
    spec.cpu.iothreads = static_cast<int>(placement.iothreadCpus.size());
    auto adopted = ledger.apply(&Ledger::decideAdoptVm, spec, placement);
    if (adopted.ok()) {
      report.adopted.push_back("VM " + vm.uuid + " (" + scope +
                               "): adopted; its memory is unknown until libvirt reports it");
    } else {
      report.unresolved.push_back("VM " + vm.uuid + " (" + scope + "): not adopted: " + adopted.error().message());
    }
  }
}

}  // namespace

ValidationReport validateLedger(Ledger& ledger, const NodeScan& scan) {
  ValidationReport report;
  releaseVanished(ledger, scan, report);
  const StatePtr now = ledger.state();
  const CpuSet shared = observedSharedPool(scan, now->shared());
  adoptPods(ledger, scan, shared, report);
  adoptVms(ledger, scan, shared, report);
  for (const std::string& note : scan.notes) report.unresolved.push_back(note);
  return report;
}

}  // namespace vri
