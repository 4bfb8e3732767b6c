#include "vri/ledger_tree.h"

namespace vri {

CpuSet nodeMemoryNodes(const Topology& topology) {
  CpuSet nodes;
  for (const NumaNode& node : topology.numaNodes()) {
    if (node.memoryBytes > 0) nodes.add(node.id);
  }
  return nodes;
}

namespace {

PodCgroup podCgroup(const PodRecord& pod) {
  PodCgroup out{pod.spec.uid, pod.spec.qos, {}, pod.spec.overheadCpuMilli, pod.spec.overheadMemoryBytes};
  for (const auto& [name, c] : pod.containers) {
    if (c.spec.id.empty()) continue;
    ContainerCgroup cgroup{c.spec.id, c.spec.cpuRequestMilli, c.spec.cpuLimitMilli, c.spec.memoryLimitBytes, {}, {}};
    if (!c.exclusive.empty()) cgroup.exclusiveCpus = c.exclusive;
    const CpuSet mems = NumaMemory::mems(c.memory);
    if (!mems.empty()) cgroup.mems = mems;
    out.containers.push_back(std::move(cgroup));
  }
  return out;
}

VmCgroup vmCgroup(const VmRecord& vm, const CgroupPath& scope, int64_t sharedVcpuMilli) {
  VmCgroup out;
  out.scope = scope;
  const VmCpuPlacement& p = vm.placement;
  int64_t shared_vcpus = 0;
  for (int cpu : p.vcpuCpus) {
    if (cpu == VmCpuPlacement::kShared) {
      out.vcpuCpus.emplace_back(std::nullopt);
      ++shared_vcpus;
    } else {
      out.vcpuCpus.emplace_back(cpu);
    }
  }
  out.cpuRequestMilli = shared_vcpus * sharedVcpuMilli + static_cast<int64_t>(p.exclusive.count()) * 1000;
  out.emulatorCpus = p.emulatorCpus;
  for (size_t i = 0; i < p.iothreadCpus.size(); ++i) {
    const int cpu = p.iothreadCpus[i];
    out.iothreadCpus[static_cast<int>(i) + 1] = cpu == VmCpuPlacement::kShared ? std::nullopt : std::optional<int>(cpu);
  }
  if (!p.mems.empty()) out.mems = p.mems;
  return out;
}

}  // namespace

Result<DesiredTree> desiredTreeFromLedger(const LedgerSnapshot& snapshot, const LedgerTreeInputs& in) {
  std::vector<PodCgroup> pods;
  for (const auto& [uid, pod] : snapshot.pods) pods.push_back(podCgroup(pod));
  std::vector<VmCgroup> vms;
  CpuSet starting;
  for (const auto& [uuid, vm] : snapshot.vms) {
    const auto scope = in.vmScopes.find(uuid);
    if (vm.defined || scope == in.vmScopes.end()) {
      starting |= vm.placement.exclusive;
      continue;
    }
    vms.push_back(vmCgroup(vm, scope->second, in.sharedVcpuMilli));
  }
  const NodeResources node{snapshot.shared, nodeMemoryNodes(in.topology), in.allocatable.allocatableCpuMilli,
                           in.allocatable.allocatableMemoryBytes, starting};
  return buildDesiredTree(in.layout, node, pods, vms);
}

}  // namespace vri
