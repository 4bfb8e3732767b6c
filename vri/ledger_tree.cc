#include "vri/ledger_tree.h"

#include <algorithm>
#include <set>

namespace vri {

CpuSet nodeMemoryNodes(const Topology& topology) {
  CpuSet nodes;
  for (const NumaNode& node : topology.numaNodes()) {
    if (node.memoryBytes > 0) nodes.add(node.id);
  }
  return nodes;
}

namespace {

// kubelet's pod-level hugetlb limits: per size, the larger of the app containers' sum and the largest
// init container's (init containers run one at a time, before the app containers).
std::map<uint64_t, uint64_t> podHugepageLimits(const PodRecord& pod, const std::set<uint64_t>& sizes) {
  std::map<uint64_t, uint64_t> apps, inits;
  for (const auto& [name, c] : pod.containers) {
    for (const auto& [size, bytes] : c.spec.hugepageLimits) {
      if (!sizes.count(size)) continue;
      if (c.spec.init) {
        inits[size] = std::max(inits[size], bytes);
      } else {
        apps[size] += bytes;
      }
    }
  }
  for (const auto& [size, bytes] : inits) apps[size] = std::max(apps[size], bytes);
  return apps;
}

// The page sizes the kernel has (it has hugetlb files for those only): a limit of 0 for another size,
// which the ledger admits, has no file to go to.
std::set<uint64_t> pageSizes(const Topology& topology) {
  std::set<uint64_t> sizes;
  for (const NumaNode& node : topology.numaNodes()) {
    for (const auto& [size, count] : node.hugepages) sizes.insert(size);
  }
  return sizes;
}

}  // namespace

PodCgroup podCgroup(const PodRecord& pod, const Topology& topology) {
  const std::set<uint64_t> sizes = pageSizes(topology);
  PodCgroup out{pod.spec.uid,
                pod.spec.qos,
                {},
                pod.spec.overheadCpuMilli,
                pod.spec.overheadMemoryBytes,
                pod.sandboxId,
                podHugepageLimits(pod, sizes)};
  for (const auto& [name, c] : pod.containers) {
    // Containers without a runtime id have no cgroup yet, but count towards the pod's values.
    ContainerCgroup cgroup{c.spec.id, c.spec.cpuRequestMilli, c.spec.cpuLimitMilli, c.spec.memoryLimitBytes, {}, {},
                           {}};
    if (!c.exclusive.empty()) cgroup.exclusiveCpus = c.exclusive;
    const CpuSet mems = NumaMemory::mems(c.memory);
    if (!mems.empty()) cgroup.mems = mems;
    for (const auto& [size, bytes] : c.spec.hugepageLimits) {
      if (sizes.count(size)) cgroup.hugepageLimits[size] = bytes;
    }
    out.containers.push_back(std::move(cgroup));
  }
  return out;
}

VmCgroup vmCgroup(const VmRecord& vm, const CgroupPath& scope, int64_t sharedVcpuMilli) {
  VmCgroup out;
  out.scope = scope;
  const VmCpuPlacement& p = vm.placement;
  int64_t shared_vcpus = 0;
  for (const auto& [vcpu, cpu] : p.vcpuCpus) {
    if (cpu == VmCpuPlacement::kShared) {
      out.vcpuCpus[vcpu] = std::nullopt;
      ++shared_vcpus;
    } else {
      out.vcpuCpus[vcpu] = cpu;
    }
  }
  out.cpuRequestMilli = shared_vcpus * sharedVcpuMilli + static_cast<int64_t>(p.exclusive.count()) * 1000;
  out.emulatorCpus = p.emulatorCpus;
  for (const auto& [id, cpu] : p.iothreadCpus)
    out.iothreadCpus[id] = cpu == VmCpuPlacement::kShared ? std::nullopt : std::optional<int>(cpu);
  if (!p.mems.empty()) out.mems = p.mems;
  for (const auto& [node, resources] : vm.memory) {
    for (const auto& [resource, bytes] : resources) {
      if (resource != kRegularMemory) out.hugepageBytes[resource] += bytes;
    }
  }
  return out;
}

NodeResources nodeResources(const LedgerState& state, const LedgerTreeInputs& in) {
  NodeResources node{state.shared(),
                     nodeMemoryNodes(in.topology),
                     in.allocatable.allocatableCpuMilli,
                     in.allocatable.allocatableMemoryBytes,
                     {},
                     {},
                     {}};
  TreeTotals& totals = node.totals;
  // Grants are at most one per CPU: this costs the machine's size, not the node's tenants.
  for (const auto& [owner, grant] : state.grants()) {
    const TenantName tenant = parseTenant(owner);
    if (tenant.kind == TenantName::Kind::kDraining) {
      node.drainingCpus |= grant.all();
    } else if (tenant.kind == TenantName::Kind::kVm) {
      const VmRecord* vm = state.vm(tenant.uuid);
      if (vm == nullptr) continue;
      if (vm->defined || !state.vmScope(tenant.uuid)) {
        node.startingVmCpus |= vm->placement.exclusive;
      } else {
        totals.vmExclusive |= vm->placement.exclusive;
      }
    } else if (tenant.kind == TenantName::Kind::kContainer) {
      const PodRecord* pod = state.pod(tenant.podUid);
      if (pod == nullptr) continue;
      totals.podExclusive |= grant.cpus;
      totals.qosExclusive[pod->spec.qos] |= grant.cpus;
    }
  }
  totals.podRequestMilli = state.totals.podRequestMilli;
  totals.burstableRequestMilli = state.totals.burstableRequestMilli;
  totals.vmRequestMilli = state.totals.startedVmRequestMilli;
  return node;
}

Result<DesiredTree> desiredTreeFromLedger(const LedgerState& state, const LedgerTreeInputs& in) {
  std::vector<PodCgroup> pods;
  for (const auto& [uid, pod] : state.pods) {
    if (!pod.spec.outsideKubeletTree) pods.push_back(podCgroup(pod, in.topology));  // the runtime's cgroups otherwise
  }
  std::vector<VmCgroup> vms;
  for (const auto& [uuid, scope] : state.vmScopes) {
    const VmRecord* vm = state.vm(uuid);
    if (vm != nullptr && !vm->defined) vms.push_back(vmCgroup(*vm, scope, in.sharedVcpuMilli));
  }
  NodeResources node = nodeResources(state, in);
  return buildDesiredTree(in.layout, node, pods, vms);
}

}  // namespace vri
