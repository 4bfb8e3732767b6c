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
  for (int cpu : allocation.vcpu_cpus()) {
    VRI_ASSIGN_OR_RETURN(CpuSet set, one(cpu));
    pins.vcpus.push_back(set);
  }
  if (allocation.emulator_cpus().empty()) {
    VRI_ASSIGN_OR_RETURN(pins.emulator, one(-1));
  } else {
    VRI_ASSIGN_OR_RETURN(pins.emulator, CpuSet::parse(allocation.emulator_cpus()));
  }
  for (int cpu : allocation.iothread_cpus()) {
    VRI_ASSIGN_OR_RETURN(CpuSet set, one(cpu));
    pins.iothreads.push_back(set);
  }
  VRI_ASSIGN_OR_RETURN(pins.mems, CpuSet::parse(allocation.cpuset_mems()));
  return pins;
}

}  // namespace vri
