#include "cgroup-model/node_tree.h"

#include <algorithm>

#include "base/enum_text.h"
#include "base/quote.h"
#include "cgroup-model/unit_ownership.h"

namespace vri {

constexpr EnumText<Ownership, 2> kOwnershipText{
    "ownership", {{{Ownership::kCpusetsAndMachine, "cpusets"}, {Ownership::kEverything, "everything"}}}};

Result<Ownership> parseOwnership(std::string_view text) { return kOwnershipText.parse(text); }
std::string_view ownershipName(Ownership ownership) { return kOwnershipText.name(ownership); }

namespace {

CgroupSpec cpusetSpec(const CpuSet& cpus, const NodeResources& node) {
  CgroupSpec spec;
  spec.settings.cpus = cpus;
  spec.settings.mems = node.memoryNodes;
  return spec;
}

// kubelet's pod-level values: shares from the requests, a quota and a memory
// limit only when every container declares one.
void addPodValues(const PodCgroup& pod, CgroupSettings& settings) {
  settings.shares =
      pod.qos == QosClass::kBestEffort ? CpuShares{CpuShares::kMin} : milliCpuToShares(podCpuRequestMilli(pod));
  const bool all_cpu_limits = std::all_of(pod.containers.begin(), pod.containers.end(),
                                          [](const ContainerCgroup& c) { return c.cpuLimitMilli > 0; });
  if (all_cpu_limits && !pod.containers.empty()) {
    int64_t limit = pod.overheadCpuMilli;
    for (const ContainerCgroup& c : pod.containers) limit += c.cpuLimitMilli;
    settings.cpuMax = CpuMax{milliCpuToQuota(limit, CpuMax::kDefaultPeriodUs), CpuMax::kDefaultPeriodUs};
  }
  const bool all_memory_limits = std::all_of(pod.containers.begin(), pod.containers.end(),
                                             [](const ContainerCgroup& c) { return c.memoryLimitBytes.has_value(); });
  if (all_memory_limits && !pod.containers.empty()) {
    uint64_t limit = pod.overheadMemoryBytes;
    for (const ContainerCgroup& c : pod.containers) limit += *c.memoryLimitBytes;
    settings.memoryMax = Limit{limit};
  }
}

// Pods' hugetlb limits: kubelet writes the pod's, the runtime each container's (VRI does where nobody
// else does: Ownership::kEverything). The `.rsvd` limits they also write are left to them.
void addHugetlbLimits(const std::map<uint64_t, uint64_t>& limits, CgroupSettings& settings) {
  for (const auto& [size, bytes] : limits) settings.hugetlbMax[size] = Limit{bytes};
}

// Under systemd, a unit whose cpuset its parent stands in for (unit_ownership.h).
bool inheritsUnitCpuset(const TreeLayout& layout, const KubeletNamer& namer, const CgroupPath& path) {
  return layout.systemdUnits && inheritsCpuset(unitKindOf(layout, namer, path));
}

// A cgroup that may hand `cpus` to a partition below it (empty: none).
void setExclusive(const TreeLayout& layout, const CpuSet& cpus, CgroupSpec& spec) {
  if (layout.cpusetPartitions) spec.settings.cpusExclusive = cpus;
}

// The CPUs every parent holds besides the shared pool: CPUs not yet back in it.
CpuSet parentExtra(const NodeResources& node) { return node.startingVmCpus | node.drainingCpus; }

Result<void> checkNoOverlap(const NodeResources& node, const std::vector<PodCgroup>& pods,
                            const std::vector<VmCgroup>& vms) {
  CpuSet all_exclusive;
  for (const PodCgroup& pod : pods) {
    for (const ContainerCgroup& c : pod.containers) {
      if (!c.exclusiveCpus) continue;
      if (c.exclusiveCpus->intersects(node.sharedCpus) || c.exclusiveCpus->intersects(all_exclusive)) {
        return Error::invalidArgument("exclusive CPUs " + c.exclusiveCpus->format() + " of container " +
                                      quoteForMessage(c.id) + " overlap the shared pool or another container's");
      }
      all_exclusive |= *c.exclusiveCpus;
    }
  }
  for (const VmCgroup& vm : vms) {
    const CpuSet exclusive = vmExclusiveCpus(vm);
    if (exclusive.intersects(node.sharedCpus)) {
      return Error::invalidArgument("exclusive CPUs " + exclusive.format() + " of VM scope " +
                                    quoteForMessage(vm.scope.str()) + " overlap the shared pool");
    }
  }
  return {};
}

}  // namespace

CgroupSettings containerValues(const ContainerCgroup& container) {
  CgroupSettings settings;
  settings.shares = milliCpuToShares(container.cpuRequestMilli);
  if (container.cpuLimitMilli > 0) {
    settings.cpuMax =
        CpuMax{milliCpuToQuota(container.cpuLimitMilli, CpuMax::kDefaultPeriodUs), CpuMax::kDefaultPeriodUs};
  }
  if (container.memoryLimitBytes) settings.memoryMax = Limit{*container.memoryLimitBytes};
  return settings;
}

CpuSet wideSharedCpus(const TreeLayout& layout, const NodeResources& node) {
  return layout.cpusetPartitions ? node.sharedCpus | node.totals.podExclusive : node.sharedCpus;
}

CpuSet podExclusiveCpus(const PodCgroup& pod) {
  CpuSet cpus;
  for (const ContainerCgroup& c : pod.containers) {
    if (c.exclusiveCpus) cpus |= *c.exclusiveCpus;
  }
  return cpus;
}

CpuSet vmExclusiveCpus(const VmCgroup& vm) {
  CpuSet cpus = vm.emulatorCpus;
  for (const auto& [vcpu, cpu] : vm.vcpuCpus) {
    if (cpu) cpus.add(*cpu);
  }
  for (const auto& [id, cpu] : vm.iothreadCpus) {
    if (cpu) cpus.add(*cpu);
  }
  return cpus;
}

TreeTotals treeTotals(const std::vector<PodCgroup>& pods, const std::vector<VmCgroup>& vms) {
  TreeTotals totals;
  for (const PodCgroup& pod : pods) {
    const CpuSet exclusive = podExclusiveCpus(pod);
    totals.podExclusive |= exclusive;
    totals.qosExclusive[pod.qos] |= exclusive;
    const int64_t requests = podCpuRequestMilli(pod);
    totals.podRequestMilli += requests;
    if (pod.qos == QosClass::kBurstable) totals.burstableRequestMilli += requests;
  }
  for (const VmCgroup& vm : vms) {
    totals.vmExclusive |= vmExclusiveCpus(vm);
    totals.vmRequestMilli += vm.cpuRequestMilli;
  }
  return totals;
}

void addNodeCgroups(const TreeLayout& layout, const KubeletNamer& namer, const NodeResources& node, DesiredTree& tree) {
  const bool everything = layout.ownership == Ownership::kEverything;
  const TreeTotals& totals = node.totals;
  const CgroupPath kubepods = namer.kubepods();
  (everything ? tree.managedRoots : tree.adoptedRoots).push_back(kubepods);
  CgroupSpec& root = tree.cgroups[kubepods] =
      cpusetSpec(node.sharedCpus | totals.podExclusive | parentExtra(node), node);
  setExclusive(layout, totals.podExclusive, root);
  if (everything) {
    root.settings.shares = milliCpuToShares(node.allocatableCpuMilli);
    if (node.allocatableMemoryBytes > 0) root.settings.memoryMax = Limit{node.allocatableMemoryBytes};
  }
  for (QosClass qos : {QosClass::kBurstable, QosClass::kBestEffort}) {
    CpuSet cpus = wideSharedCpus(layout, node) | node.drainingCpus;
    CpuSet qos_exclusive;
    if (const auto exclusive = totals.qosExclusive.find(qos); exclusive != totals.qosExclusive.end()) {
      qos_exclusive = exclusive->second;
    }
    CgroupSpec& spec = tree.cgroups[namer.qos(qos)] = cpusetSpec(cpus | qos_exclusive, node);
    setExclusive(layout, qos_exclusive, spec);
    if (everything) {
      spec.settings.shares =
          qos == QosClass::kBurstable ? milliCpuToShares(totals.burstableRequestMilli) : CpuShares{2};
    }
  }
  tree.adoptedRoots.push_back(layout.machinePartition);
  // With cpuset partitions, wide like every shared cgroup: a pod's grant leaves it unwritten.
  CgroupSpec& partition = tree.cgroups[layout.machinePartition] =
      cpusetSpec(wideSharedCpus(layout, node) | totals.vmExclusive | parentExtra(node), node);
  partition.settings.shares =
      machinePartitionShares(node.allocatableCpuMilli, totals.podRequestMilli, totals.vmRequestMilli);
}

Result<void> addPodCgroups(const TreeLayout& layout, const KubeletNamer& namer, const NodeResources& node,
                           const PodCgroup& pod, DesiredTree& tree) {
  const bool everything = layout.ownership == Ownership::kEverything;
  VRI_ASSIGN_OR_RETURN(CgroupPath pod_path, namer.pod(pod.qos, pod.uid));
  if (tree.cgroups.count(pod_path))
    return Error::invalidArgument("pod " + quoteForMessage(pod.uid) + " is listed twice");
  const CpuSet pod_exclusive = podExclusiveCpus(pod);
  const CpuSet shared = wideSharedCpus(layout, node);
  CgroupSpec& pod_spec = tree.cgroups[pod_path] = cpusetSpec(shared | pod_exclusive, node);
  setExclusive(layout, pod_exclusive, pod_spec);
  if (pod_exclusive.empty() && inheritsUnitCpuset(layout, namer, pod_path)) pod_spec.settings = {};
  if (everything) addPodValues(pod, pod_spec.settings);
  addHugetlbLimits(pod.hugepageLimits, everything ? pod_spec.settings : pod_spec.verified);
  // The pod's shared cgroups leave out its own partitions' CPUs: a sibling whose cpuset holds a
  // partition's CPUs makes the kernel invalidate it (6.12; cousins do not).
  const CpuSet shared_here = shared - pod_exclusive;
  const auto partitionMember = [&](CgroupSpec& spec) {
    setExclusive(layout, CpuSet(), spec);
    if (layout.cpusetPartitions) spec.settings.partitionRoot = false;
  };
  if (!pod.sandboxId.empty()) {
    VRI_ASSIGN_OR_RETURN(CgroupPath path, namer.container(pod.qos, pod.uid, pod.sandboxId));
    CgroupSpec& spec = tree.cgroups[path] = cpusetSpec(shared_here, node);
    partitionMember(spec);
    if (everything) spec.settings.shares = CpuShares{CpuShares::kMin};
  }
  for (const ContainerCgroup& container : pod.containers) {
    if (container.id.empty()) continue;  // no cgroup until the runtime names it
    VRI_ASSIGN_OR_RETURN(CgroupPath path, namer.container(pod.qos, pod.uid, container.id));
    CgroupSpec& spec = tree.cgroups[path] = cpusetSpec(container.exclusiveCpus.value_or(shared_here), node);
    if (container.exclusiveCpus && layout.cpusetPartitions) {
      spec.settings.cpusExclusive = *container.exclusiveCpus;
      spec.settings.partitionRoot = true;
    } else {
      partitionMember(spec);
    }
    if (container.mems) spec.settings.mems = *container.mems;
    if (everything) {
      const CgroupSettings values = containerValues(container);
      spec.settings.shares = values.shares;
      spec.settings.cpuMax = values.cpuMax;
      spec.settings.memoryMax = values.memoryMax;
    }
    addHugetlbLimits(container.hugepageLimits, everything ? spec.settings : spec.verified);
  }
  return {};
}

Result<void> addVmCgroups(const TreeLayout& layout, const LibvirtNamer& namer, const NodeResources& node,
                          const VmCgroup& vm, DesiredTree& tree) {
  if (vm.scope.depth() != layout.machinePartition.depth() + 1 || !vm.scope.isWithin(layout.machinePartition)) {
    return Error::invalidArgument("VM scope " + quoteForMessage(vm.scope.str()) + " is not directly under " +
                                  quoteForMessage(layout.machinePartition.str()));
  }
  if (tree.cgroups.count(vm.scope))
    return Error::invalidArgument("VM scope " + quoteForMessage(vm.scope.str()) + " is listed twice");
  const CpuSet exclusive = vmExclusiveCpus(vm);
  // Shared threads run on the wide set (with cpuset partitions the kernel leaves pods' partitions out).
  const CpuSet shared = wideSharedCpus(layout, node);
  CgroupSpec& scope = tree.cgroups[vm.scope] = cpusetSpec(shared | exclusive, node);
  if (layout.systemdUnits && inheritsCpuset(machineUnitKindOf(layout, vm.scope))) scope.settings = {};
  scope.settings.shares = vm.shares.value_or(milliCpuToShares(vm.cpuRequestMilli));
  // QEMU's hugepages are charged to the scope (hugetlb is a domain controller on v2): no more than it was given.
  for (const auto& [size, bytes] : vm.hugepageBytes) scope.settings.hugetlbMax[size] = Limit{bytes};
  const CgroupPath threads = namer.threadParent(vm.scope);
  if (threads != vm.scope) tree.cgroups[threads] = cpusetSpec(shared | exclusive, node);
  const auto threadGroup = [&](const CgroupPath& path, const CpuSet& cpus) -> CgroupSpec& {
    CgroupSpec& spec = tree.cgroups[path] = cpusetSpec(cpus, node);
    if (vm.mems) spec.settings.mems = *vm.mems;
    spec.threaded = true;
    return spec;
  };
  for (const auto& [vcpu, cpu] : vm.vcpuCpus) {
    CgroupSpec& spec = threadGroup(namer.vcpu(vm.scope, vcpu), cpu ? CpuSet{*cpu} : shared);
    if (vm.vcpuMax) spec.settings.cpuMax = vm.vcpuMax;
  }
  threadGroup(namer.emulator(vm.scope), vm.emulatorCpus.empty() ? shared : vm.emulatorCpus);
  for (const auto& [id, cpu] : vm.iothreadCpus) threadGroup(namer.iothread(vm.scope, id), cpu ? CpuSet{*cpu} : shared);
  return {};
}

int64_t podCpuRequestMilli(const PodCgroup& pod) {
  int64_t total = pod.overheadCpuMilli;
  for (const ContainerCgroup& c : pod.containers) total += c.cpuRequestMilli;
  return total;
}

CpuShares burstableQosShares(const std::vector<PodCgroup>& pods) {
  int64_t requests = 0;
  for (const PodCgroup& pod : pods) {
    if (pod.qos == QosClass::kBurstable) requests += podCpuRequestMilli(pod);
  }
  return milliCpuToShares(requests);
}

CpuShares machinePartitionShares(int64_t allocatableCpuMilli, int64_t podRequestMilli, int64_t vmRequestMilli) {
  if (vmRequestMilli <= 0) return {CpuShares::kMin};
  if (podRequestMilli <= 0) return milliCpuToShares(vmRequestMilli);
  const double kubepods = static_cast<double>(milliCpuToShares(allocatableCpuMilli).value);
  const auto shares =
      static_cast<uint64_t>(kubepods * static_cast<double>(vmRequestMilli) / static_cast<double>(podRequestMilli));
  return {std::clamp<uint64_t>(shares, CpuShares::kMin, CpuShares::kMax)};
}

CpuShares machinePartitionShares(const NodeResources& node, const std::vector<PodCgroup>& pods,
                                 const std::vector<VmCgroup>& vms) {
  const TreeTotals totals = treeTotals(pods, vms);
  return machinePartitionShares(node.allocatableCpuMilli, totals.podRequestMilli, totals.vmRequestMilli);
}

Result<DesiredTree> buildDesiredTree(const TreeLayout& layout, const NodeResources& node,
                                     const std::vector<PodCgroup>& pods, const std::vector<VmCgroup>& vms) {
  if (node.memoryNodes.empty()) return Error::invalidArgument("the node has no memory nodes for cpuset.mems");
  VRI_TRY(checkNoOverlap(node, pods, vms));
  NodeResources whole = node;
  whole.totals = treeTotals(pods, vms);
  DesiredTree tree;
  const auto kubelet = makeKubeletNamer(layout.driver, layout.kubeletParent);
  addNodeCgroups(layout, *kubelet, whole, tree);
  for (const PodCgroup& pod : pods) VRI_TRY(addPodCgroups(layout, *kubelet, whole, pod, tree));
  const LibvirtNamer libvirt(layout.libvirt, layout.machinePartition);
  for (const VmCgroup& vm : vms) VRI_TRY(addVmCgroups(layout, libvirt, whole, vm, tree));
  return tree;
}

}  // namespace vri
