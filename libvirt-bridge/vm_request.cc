#include "libvirt-bridge/vm_request.h"

namespace vri {

namespace {

Result<void> addUserPins(const DomainXml& domain, v1::AdmitVmRequest& request) {
  for (int vcpu = 0; vcpu < domain.currentVcpus; ++vcpu) request.add_pinned_vcpu_cpus(-1);
  for (const auto& [vcpu, cpus] : domain.cputune.vcpupins) {
    if (vcpu >= domain.currentVcpus) continue;  // offline vCPUs have no thread to place
    if (cpus.count() != 1) {
      return Error::invalidArgument("domain " + domain.name + ": <vcpupin vcpu='" + std::to_string(vcpu) +
                                    "' cpuset='" + cpus.format() +
                                    "'>: VRI gives a pinned vCPU exactly one CPU; pin each vCPU to one CPU, or drop "
                                    "the pins and ask for <vri:cpu policy='dedicated'/>");
    }
    request.set_pinned_vcpu_cpus(vcpu, *cpus.begin());
  }
  return {};
}

Result<void> addPolicy(const DomainXml& domain, v1::AdmitVmRequest& request) {
  const VriDomainMetadata& vri = domain.vri;
  if (vri.cpuPolicy == "dedicated") {
    request.set_cpu_policy(v1::DEDICATED);
  } else if (vri.cpuPolicy == "mixed") {
    request.set_cpu_policy(v1::MIXED);
    for (int vcpu : vri.dedicatedVcpus) {
      if (vcpu >= domain.currentVcpus) {
        return Error::invalidArgument("domain " + domain.name + ": <vri:cpu dedicated-vcpus>: vCPU " +
                                      std::to_string(vcpu) + " does not exist (the domain runs " +
                                      std::to_string(domain.currentVcpus) + ")");
      }
      request.add_mixed_dedicated_vcpus(vcpu);
    }
  } else {
    request.set_cpu_policy(v1::SHARED);
  }
  if (vri.threadPolicy == "isolate") request.set_thread_policy(v1::ISOLATE);
  if (vri.threadPolicy == "require") request.set_thread_policy(v1::REQUIRE);
  if (vri.threadPolicy == "prefer") request.set_thread_policy(v1::PREFER);
  return {};
}

}  // namespace

Result<v1::AdmitVmRequest> vmRequestFromDomain(const DomainXml& domain) {
  v1::AdmitVmRequest request;
  request.set_uuid(domain.uuid);
  request.set_name(domain.name);
  request.set_vcpus(domain.currentVcpus);
  request.set_guest_threads_per_core(domain.cpuTopology.threads);
  if (domain.hasUserPins()) {
    VRI_TRY(addUserPins(domain, request));
  } else {
    VRI_TRY(addPolicy(domain, request));
  }
  request.set_isolate_emulator(domain.vri.emulatorThreads == "isolate");
  request.set_iothreads(domain.iothreads);
  request.set_isolate_iothreads(domain.vri.iothreadPolicy == "isolate");
  request.set_memory_bytes(domain.memoryBytes);
  if (domain.hugepages) {
    request.set_hugepage_size(domain.hugepageSizeBytes != 0 ? domain.hugepageSizeBytes : kDefaultHugepageBytes);
  }
  if (domain.numatune && (domain.numatune->mode == "strict" || domain.numatune->mode == "restrictive")) {
    for (int node : domain.numatune->nodeset) request.add_strict_numa_nodes(node);
  }
  return request;
}

}  // namespace vri
