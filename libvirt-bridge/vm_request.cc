#include "libvirt-bridge/vm_request.h"

#include <algorithm>

namespace vri {

namespace {

bool isOnline(const DomainXml& domain, int vcpu) {
  return std::binary_search(domain.onlineVcpus.begin(), domain.onlineVcpus.end(), vcpu);
}

// Every vCPU id's pin, offline ones included: libvirt applies a pin when the
// vCPU is brought online, so VRI holds its CPU as it holds a running one's.
Result<void> addUserPins(const DomainXml& domain, DomainRequest& request) {
  request.pinnedVcpuCpus.assign(domain.maxVcpus, -1);
  for (const auto& [vcpu, cpus] : domain.cputune.vcpupins) {
    if (cpus.count() != 1) {
      return Error::invalidArgument("domain " + domain.name + ": <vcpupin vcpu='" + std::to_string(vcpu) +
                                    "' cpuset='" + cpus.format() +
                                    "'>: VRI gives a pinned vCPU exactly one CPU; pin each vCPU to one CPU, or drop "
                                    "the pins and ask for <vri:cpu policy='dedicated'/>");
    }
    request.pinnedVcpuCpus[vcpu] = *cpus.begin();
  }
  return {};
}

Result<void> addPolicy(const DomainXml& domain, DomainRequest& request) {
  const VriDomainMetadata& vri = domain.vri;
  if (vri.cpuPolicy == "dedicated") {
    request.cpuPolicy = DomainRequest::CpuPolicy::kDedicated;
  } else if (vri.cpuPolicy == "mixed") {
    request.cpuPolicy = DomainRequest::CpuPolicy::kMixed;
    for (int vcpu : vri.dedicatedVcpus) {
      if (vcpu >= domain.maxVcpus) {
        return Error::invalidArgument("domain " + domain.name + ": <vri:cpu dedicated-vcpus>: vCPU " +
                                      std::to_string(vcpu) + " does not exist (the domain has " +
                                      std::to_string(domain.maxVcpus) + ")");
      }
      if (!isOnline(domain, vcpu)) {
        return Error::invalidArgument("domain " + domain.name + ": <vri:cpu dedicated-vcpus>: vCPU " +
                                      std::to_string(vcpu) +
                                      " is offline at start; VRI dedicates CPUs to the vCPUs libvirt starts "
                                      "(<vcpus><vcpu enabled='yes'>)");
      }
      request.mixedDedicatedVcpus.push_back(vcpu);
    }
  } else {
    request.cpuPolicy = DomainRequest::CpuPolicy::kShared;
  }
  if (vri.threadPolicy == "isolate") request.threadPolicy = DomainRequest::ThreadPolicy::kIsolate;
  if (vri.threadPolicy == "require") request.threadPolicy = DomainRequest::ThreadPolicy::kRequire;
  if (vri.threadPolicy == "prefer") request.threadPolicy = DomainRequest::ThreadPolicy::kPrefer;
  return {};
}

}  // namespace

Result<DomainRequest> domainRequest(const DomainXml& domain) {
  DomainRequest request;
  request.uuid = domain.uuid;
  request.name = domain.name;
  request.vcpus = domain.currentVcpus;
  request.onlineVcpus = domain.onlineVcpus;
  request.maxVcpus = domain.maxVcpus;
  request.iothreadIds = domain.iothreadIds;
  request.guestThreadsPerCore = domain.cpuTopology.threads;
  if (domain.hasUserPins()) {
    VRI_TRY(addUserPins(domain, request));
  } else {
    VRI_TRY(addPolicy(domain, request));
  }
  request.isolateEmulator = domain.vri.emulatorThreads == "isolate";
  request.iothreads = domain.iothreads;
  request.isolateIothreads = domain.vri.iothreadPolicy == "isolate";
  request.memoryBytes = domain.memoryBytes;
  if (domain.hugepages) {
    request.hugepageSize = domain.hugepageSizeBytes != 0 ? domain.hugepageSizeBytes : kDefaultHugepageBytes;
  }
  if (domain.numatune && (domain.numatune->mode == "strict" || domain.numatune->mode == "restrictive")) {
    request.strictNumaNodes.assign(domain.numatune->nodeset.begin(), domain.numatune->nodeset.end());
  }
  return request;
}

v1::AdmitVmRequest admitVmRequest(const DomainRequest& r) {
  v1::AdmitVmRequest out;
  out.set_uuid(r.uuid);
  out.set_name(r.name);
  out.set_vcpus(r.vcpus);
  out.set_guest_threads_per_core(r.guestThreadsPerCore);
  switch (r.cpuPolicy) {
    case DomainRequest::CpuPolicy::kShared: out.set_cpu_policy(v1::SHARED); break;
    case DomainRequest::CpuPolicy::kDedicated: out.set_cpu_policy(v1::DEDICATED); break;
    case DomainRequest::CpuPolicy::kMixed: out.set_cpu_policy(v1::MIXED); break;
  }
  for (int vcpu : r.mixedDedicatedVcpus) out.add_mixed_dedicated_vcpus(vcpu);
  switch (r.threadPolicy) {
    case DomainRequest::ThreadPolicy::kUnset: break;
    case DomainRequest::ThreadPolicy::kPrefer: out.set_thread_policy(v1::PREFER); break;
    case DomainRequest::ThreadPolicy::kIsolate: out.set_thread_policy(v1::ISOLATE); break;
    case DomainRequest::ThreadPolicy::kRequire: out.set_thread_policy(v1::REQUIRE); break;
  }
  out.set_isolate_emulator(r.isolateEmulator);
  out.set_iothreads(r.iothreads);
  for (int vcpu : r.onlineVcpus) out.add_online_vcpus(vcpu);
  out.set_max_vcpus(r.maxVcpus);
  for (int id : r.iothreadIds) out.add_iothread_ids(id);
  out.set_isolate_iothreads(r.isolateIothreads);
  out.set_memory_bytes(r.memoryBytes);
  out.set_hugepage_size(r.hugepageSize);
  for (int node : r.strictNumaNodes) out.add_strict_numa_nodes(node);
  for (int cpu : r.pinnedVcpuCpus) out.add_pinned_vcpu_cpus(cpu);
  return out;
}

Result<v1::AdmitVmRequest> vmRequestFromDomain(const DomainXml& domain) {
  VRI_ASSIGN_OR_RETURN(DomainRequest request, domainRequest(domain));
  return admitVmRequest(request);
}

}  // namespace vri
