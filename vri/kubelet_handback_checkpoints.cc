#include "vri/kubelet_handback_checkpoints.h"

#include "accounting/numa_memory.h"
#include "base/quote.h"

namespace vri {

namespace {

std::string mebibytes(uint64_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + "Mi" : std::to_string(bytes) + " bytes";
}

// kubelet refuses to start when reservedMemory's regular memory does not add up to its node
// allocatable's reservation (memory_manager.go validateReservedMemory).
Result<void> checkReservationAddsUp(const KubeletSettings& kubelet) {
  if (!kubelet.evictionHardMemory)
    return Error::failedPrecondition("kubelet's evictionHard memory.available is " + kubelet.evictionHardMemoryText +
                                     ", a share: give it an amount, that reservedMemory can add up to");
  const int64_t want =
      kubelet.systemReservedMemory.value() + kubelet.kubeReservedMemory.value() + kubelet.evictionHardMemory->value();
  int64_t reserved = 0;
  for (const auto& [node, limits] : kubelet.reservedMemory) {
    const auto memory = limits.find("memory");
    if (memory != limits.end()) reserved += static_cast<int64_t>(memory->second);
  }
  if (reserved == want) return {};
  return Error::failedPrecondition("kubelet's reservedMemory adds up to " + mebibytes(static_cast<uint64_t>(reserved)) +
                                   " of memory, but its systemReserved, kubeReserved and evictionHard hold back " +
                                   mebibytes(static_cast<uint64_t>(want)) +
                                   ": kubelet's static memory policy would not start; make them equal");
}

}  // namespace

Result<CpuManagerCheckpoint> cpuCheckpointOf(const LedgerState& state, const KubeletSettings* kubelet) {
  std::string vms;
  for (const auto& [owner, grant] : state.grants()) {
    if (!owner.starts_with("vm/") || grant.all().empty()) continue;
    const std::string uuid = owner.substr(3, owner.find('/', 3) - 3);  // "vm/<uuid>[/…]"; npos - 3 takes the rest
    const VmRecord* vm = state.vm(uuid);
    vms += std::string(vms.empty() ? "" : ", ") + (vm != nullptr ? vm->spec.cpu.name : uuid) + " (" +
           grant.all().format() + ")";
  }
  if (!vms.empty())
    return Error::failedPrecondition(
        "VMs hold exclusive CPUs: " + vms +
        ". kubelet's static policy would give them to pods; stop those VMs, or make their vCPUs shared, first");
  if (!state.draining().empty())
    return Error::failedPrecondition("CPUs " + state.draining().format() +
                                     " wait for cgroup writes to land; hand back after a reconcile that repairs them");
  CpuManagerCheckpoint cp;
  cp.policyName = "static";
  CpuSet exclusive;
  std::string onReserved;
  for (const auto& [uid, pod] : state.pods) {
    for (const auto& [name, container] : pod.containers) {
      if (container.exclusive.empty()) continue;
      cp.entries[uid][name] = container.exclusive.format();
      exclusive = exclusive | container.exclusive;
      // kubelet refuses to start when a reserved CPU is not in its default set.
      if (kubelet != nullptr && kubelet->reservedSystemCpus &&
          !(container.exclusive & *kubelet->reservedSystemCpus).empty())
        onReserved += std::string(onReserved.empty() ? "" : ", ") + pod.spec.name + " " + name + " (" +
                      (container.exclusive & *kubelet->reservedSystemCpus).format() + ")";
    }
  }
  if (!onReserved.empty())
    return Error::failedPrecondition("kubelet's reservedSystemCPUs " + kubelet->reservedSystemCpus->format() +
                                     " hold CPUs that containers hold exclusively: " + onReserved +
                                     "; kubelet would refuse the checkpoint. Reserve the CPUs VRI reserves (" +
                                     state.reserved().format() + ")");
  cp.defaultCpuSet = (state.pool.topology().onlineCpus() - exclusive).format();
  return cp;
}

Result<MemoryManagerCheckpoint> memoryCheckpointOf(const LedgerState& state, const KubeletSettings& kubelet) {
  VRI_TRY(checkReservationAddsUp(kubelet));
  const Topology& topology = state.pool.topology();
  std::vector<int> everyNode;
  for (const NumaNode& node : topology.numaNodes()) everyNode.push_back(node.id);
  MemoryManagerCheckpoint cp;
  cp.policyName = "Static";
  for (const auto& [uid, pod] : state.pods) {
    if (pod.spec.qos != QosClass::kGuaranteed || pod.spec.outsideKubeletTree) continue;
    for (const auto& [name, container] : pod.containers) {
      if (container.spec.init) continue;  // ran to its end before the app containers started
      if (!container.spec.memoryLimitBytes)
        return Error::failedPrecondition("the memory limit of " + pod.spec.name + " container " +
                                         quoteForMessage(name) +
                                         " is not known (adopted from its cgroups, not yet named by the runtime): "
                                         "hand back once the runtime has reported it");
      std::vector<int> nodes;
      for (const auto& [node, resources] : container.memory) nodes.push_back(node);
      if (nodes.empty()) nodes = everyNode;  // not pinned: its cpuset.mems is every node
      auto& blocks = cp.entries[uid][name];
      blocks.push_back({nodes, memoryResourceName(kRegularMemory), *container.spec.memoryLimitBytes});
      for (const auto& [pageSize, bytes] : container.spec.hugepageLimits)
        if (bytes > 0) blocks.push_back({nodes, memoryResourceName(pageSize), bytes});
    }
  }
  VRI_ASSIGN_OR_RETURN(cp.machineState, kubeletMachineState(topology.numaNodes(), kubelet.reservedMemory, cp.entries));
  return cp;
}

}  // namespace vri
