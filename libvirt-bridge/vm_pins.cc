#include "libvirt-bridge/vm_pins.h"

namespace vri {

Result<VmPins> vmPinsFrom(const v1::VmAllocation& allocation) {
  VRI_ASSIGN_OR_RETURN(CpuSet shared, CpuSet::parse(allocation.shared_cpus()));
  const auto one = [&](int cpu) -> Result<CpuSet> {
    if (cpu < 0) {
      if (shared.empty()) return Error::failedPrecondition("a shared thread, and the shared pool is empty");
      return shared;
    }
    if (cpu >= CpuSet::kMaxCpus) return Error::invalidArgument("no CPU " + std::to_string(cpu));
    return CpuSet{cpu};
  };
  VmPins pins;
  for (int vcpu = 0; vcpu < allocation.vcpu_cpus_size(); ++vcpu) {
    VRI_ASSIGN_OR_RETURN(pins.vcpus[vcpu], one(allocation.vcpu_cpus(vcpu)));
    if (allocation.vcpu_cpus(vcpu) < 0) pins.sharedVcpus.add(vcpu);
  }
  if (allocation.emulator_cpus().empty()) {
    VRI_ASSIGN_OR_RETURN(pins.emulator, one(-1));
    pins.sharedEmulator = true;
  } else {
    VRI_ASSIGN_OR_RETURN(pins.emulator, CpuSet::parse(allocation.emulator_cpus()));
  }
  if (!allocation.iothread_ids().empty() && allocation.iothread_ids_size() != allocation.iothread_cpus_size()) {
    return Error::invalidArgument("the allocation names " + std::to_string(allocation.iothread_ids_size()) +
                                  " iothread ids for " + std::to_string(allocation.iothread_cpus_size()) +
                                  " iothreads");
  }
  for (int i = 0; i < allocation.iothread_cpus_size(); ++i) {
    const IothreadId id =
        allocation.iothread_ids().empty() ? static_cast<IothreadId>(i + 1) : allocation.iothread_ids(i);
    VRI_ASSIGN_OR_RETURN(pins.iothreads[id], one(allocation.iothread_cpus(i)));
    if (allocation.iothread_cpus(i) < 0) pins.sharedIothreads.insert(id);
  }
  VRI_ASSIGN_OR_RETURN(pins.mems, CpuSet::parse(allocation.cpuset_mems()));
  for (const auto& [cell, nodes] : allocation.cell_nodes()) {
    if (cell < 0) return Error::invalidArgument("the allocation names guest cell " + std::to_string(cell));
    VRI_ASSIGN_OR_RETURN(pins.cellNodes[cell], CpuSet::parse(nodes));
  }
  return pins;
}

}  // namespace vri
