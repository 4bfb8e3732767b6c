#include "vri/domain_spec.h"

#include "libvirt-bridge/cputune_writer.h"

namespace vri {

Result<VmSpec> vmSpecFrom(const DomainRequest& r) {
  if (r.memoryBytes == 0) return Error::invalidArgument("domain " + r.name + ": a VM needs memory");
  VmSpec vm;
  vm.uuid = r.uuid;
  vm.cpu.name = r.name.empty() ? r.uuid : r.name;
  vm.cpu.vcpus = r.vcpus;
  vm.cpu.onlineVcpus = r.onlineVcpus;
  vm.cpu.maxVcpus = r.maxVcpus;
  vm.cpu.iothreadIds = r.iothreadIds;
  switch (r.cpuPolicy) {
    case DomainRequest::CpuPolicy::kShared: vm.cpu.cpuPolicy = VmCpuPolicy::kShared; break;
    case DomainRequest::CpuPolicy::kDedicated: vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated; break;
    case DomainRequest::CpuPolicy::kMixed: vm.cpu.cpuPolicy = VmCpuPolicy::kMixed; break;
  }
  vm.cpu.mixedDedicatedVcpus = r.mixedDedicatedVcpus;
  vm.cpu.guestThreadsPerCore = r.guestThreadsPerCore > 0 ? r.guestThreadsPerCore : 1;
  switch (r.threadPolicy) {
    case DomainRequest::ThreadPolicy::kUnset:
    case DomainRequest::ThreadPolicy::kPrefer: vm.cpu.threadPolicy = ThreadPolicy::kPrefer; break;
    case DomainRequest::ThreadPolicy::kIsolate: vm.cpu.threadPolicy = ThreadPolicy::kIsolate; break;
    case DomainRequest::ThreadPolicy::kRequire: vm.cpu.threadPolicy = ThreadPolicy::kRequire; break;
  }
  vm.cpu.emulatorPolicy = r.isolateEmulator ? HelperThreadPolicy::kIsolate : HelperThreadPolicy::kShared;
  vm.cpu.iothreads = r.iothreads;
  vm.cpu.iothreadPolicy = r.isolateIothreads ? HelperThreadPolicy::kIsolate : HelperThreadPolicy::kShared;
  vm.cpu.pinnedVcpuCpus = r.pinnedVcpuCpus;
  vm.memoryBytes = r.memoryBytes;
  vm.hugepageSize = r.hugepageSize;
  vm.strictNumaNodes = r.strictNumaNodes;
  for (const DomainRequest::Cell& cell : r.cells) vm.cells.push_back({cell.id, cell.vcpus});
  for (const DomainRequest::MemoryPart& part : r.memoryParts)
    vm.memoryParts.push_back({part.cell, part.bytes, part.pageSize, part.hostNodes, part.device});
  vm.alignCells = r.alignCells;
  return vm;
}

Result<VmPins> vmPinsOf(const VmCpuRequest& request, const VmCpuPlacement& placement, const CpuSet& shared) {
  const auto one = [&](int cpu) -> Result<CpuSet> {
    if (cpu != VmCpuPlacement::kShared) return CpuSet{cpu};
    if (shared.empty()) return Error::failedPrecondition("a shared thread, and the shared pool is empty");
    return shared;
  };
  VmPins pins;
  const std::vector<int> by_id = vcpuCpusById(request, placement);
  for (size_t vcpu = 0; vcpu < by_id.size(); ++vcpu) {
    VRI_ASSIGN_OR_RETURN(pins.vcpus[static_cast<int>(vcpu)], one(by_id[vcpu]));
    if (by_id[vcpu] == VmCpuPlacement::kShared) pins.sharedVcpus.add(static_cast<int>(vcpu));
  }
  if (placement.emulatorCpus.empty()) {
    VRI_ASSIGN_OR_RETURN(pins.emulator, one(VmCpuPlacement::kShared));
    pins.sharedEmulator = true;
  } else {
    pins.emulator = placement.emulatorCpus;
  }
  for (const auto& [id, cpu] : placement.iothreadCpus) {
    VRI_ASSIGN_OR_RETURN(pins.iothreads[id], one(cpu));
    if (cpu == VmCpuPlacement::kShared) pins.sharedIothreads.insert(id);
  }
  pins.mems = placement.mems;
  pins.cellNodes = placement.cellNodes;
  return pins;
}

VriDomainMetadata vriMetadataOf(const VmCpuRequest& request, const VmPins& pins) {
  VriDomainMetadata out;
  switch (request.cpuPolicy) {
    case VmCpuPolicy::kShared: out.cpuPolicy = "shared"; break;
    case VmCpuPolicy::kDedicated: out.cpuPolicy = "dedicated"; break;
    case VmCpuPolicy::kMixed:
      out.cpuPolicy = "mixed";
      for (int vcpu : request.mixedDedicatedVcpus) out.dedicatedVcpus.add(vcpu);
      break;
  }
  switch (request.threadPolicy) {
    case ThreadPolicy::kPrefer: out.threadPolicy = "prefer"; break;
    case ThreadPolicy::kIsolate: out.threadPolicy = "isolate"; break;
    case ThreadPolicy::kRequire: out.threadPolicy = "require"; break;
  }
  out.emulatorThreads = request.emulatorPolicy == HelperThreadPolicy::kIsolate ? "isolate" : "shared";
  out.iothreadPolicy = request.iothreadPolicy == HelperThreadPolicy::kIsolate ? "isolate" : "shared";
  out.placement = placementMark(pins);
  return out;
}

}  // namespace vri
