#include "libvirt-bridge/vm_request.h"

#include <algorithm>

#include "base/amount_limits.h"

namespace vri {

namespace {

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

uint64_t hugepageOrRegular(uint64_t size) { return size == kSystemPageBytes ? 0 : size; }

// The page size of a guest cell's memory (-1: the guest without cells): the
// <page> naming the cell, else the one naming no cells; <hugepages/> with no
// <page> at all is the host's default size. When every <page> names cells,
// libvirt backs a cell none of them names with ordinary memory. A guest
// without cells is cell 0 to libvirt's page lookup (<page nodeset='0'> backs it).
uint64_t pageSizeOf(const DomainXml& domain, int cell) {
  if (!domain.hugepages) return 0;
  if (cell < 0 && domain.cells.empty()) cell = 0;
  if (domain.hugepagePages.empty()) return hugepageOrRegular(kDefaultHugepageBytes);
  const DomainHugepage* fallback = nullptr;
  for (const DomainHugepage& page : domain.hugepagePages) {
    if (page.cells.empty()) {
      if (fallback == nullptr) fallback = &page;
    } else if (cell >= 0 && page.cells.contains(cell)) {
      return hugepageOrRegular(page.sizeBytes);
    }
  }
  return fallback != nullptr ? hugepageOrRegular(fallback->sizeBytes) : 0;
}

// Modes whose nodes VRI accounts the memory on: strict and restrictive keep it
// there. "preferred" only prefers its nodes (the kernel falls back to others)
// and "interleave" spreads it: VRI places that memory itself.
bool bindsHard(const DomainNumatune& numatune) { return numatune.mode == "strict" || numatune.mode == "restrictive"; }

// The host nodes the domain binds the whole guest's memory to.
std::vector<int> wholeBinding(const DomainXml& domain) {
  if (!domain.numatune || !bindsHard(*domain.numatune)) return {};
  return {domain.numatune->nodeset.begin(), domain.numatune->nodeset.end()};
}

// A cell's binding: its <memnode> when that binds hard (a preferred one binds
// nothing), else the whole guest's.
std::vector<int> cellBinding(const DomainXml& domain, int cell) {
  const auto memnode = domain.memnodes.find(cell);
  if (memnode == domain.memnodes.end()) return wholeBinding(domain);
  if (!bindsHard(memnode->second)) return {};
  return {memnode->second.nodeset.begin(), memnode->second.nodeset.end()};
}

Result<void> addMemory(const DomainXml& domain, DomainRequest& request) {
  request.memoryBytes = domain.memoryBytes;
  if (domain.cells.empty() && domain.memoryDevices.empty()) {
    request.hugepageSize = pageSizeOf(domain, -1);
    request.strictNumaNodes = wholeBinding(domain);
    return {};
  }
  // Per cell and per memory device, each at its own page size and binding.
  uint64_t devices = 0;
  for (const DomainMemoryDevice& device : domain.memoryDevices) {
    VRI_ASSIGN_OR_RETURN(devices, addBytes("domain " + domain.name + ": memory devices", devices, device.sizeBytes));
  }
  for (const DomainCell& cell : domain.cells) {
    request.cells.push_back({cell.id, cell.vcpus});
    request.memoryParts.push_back(
        {cell.id, cell.memoryBytes, pageSizeOf(domain, cell.id), cellBinding(domain, cell.id)});
  }
  for (const auto& entry : domain.memnodes) {
    const int cell = entry.first;  // (clang 14's lambdas cannot capture bindings)
    if (std::none_of(domain.cells.begin(), domain.cells.end(), [&](const DomainCell& c) { return c.id == cell; })) {
      return Error::invalidArgument("domain " + domain.name + ": <memnode cellid='" + std::to_string(cell) +
                                    "'> names a guest cell the domain does not have");
    }
  }
  if (domain.cells.empty()) {
    if (devices > domain.memoryBytes) {
      return Error::invalidArgument("domain " + domain.name + ": memory devices hold more than <memory>");
    }
    request.memoryParts.push_back({-1, domain.memoryBytes - devices, pageSizeOf(domain, -1), wholeBinding(domain)});
  }
  for (const DomainMemoryDevice& device : domain.memoryDevices) {
    // A file QEMU maps (nvdimm, virtio-pmem) is counted in <memory> but takes no RAM or hugepages.
    if (device.fileBacked()) continue;
    const int cell = device.cell.value_or(-1);
    DomainRequest::MemoryPart part{
        cell, device.sizeBytes,
        device.pageSizeBytes != 0 ? hugepageOrRegular(device.pageSizeBytes) : pageSizeOf(domain, cell),
        cellBinding(domain, cell)};
    if (!device.nodemask.empty()) part.hostNodes.assign(device.nodemask.begin(), device.nodemask.end());
    part.device = true;
    request.memoryParts.push_back(std::move(part));
  }
  request.memoryBytes = 0;
  for (const DomainRequest::MemoryPart& part : request.memoryParts) {
    VRI_ASSIGN_OR_RETURN(request.memoryBytes,
                         addBytes("domain " + domain.name + ": memory", request.memoryBytes, part.bytes));
  }
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
  VRI_TRY(addMemory(domain, request));
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
  for (IothreadId id : r.iothreadIds) out.add_iothread_ids(id);
  for (const DomainRequest::Cell& cell : r.cells) {
    v1::GuestCell& c = *out.add_cells();
    c.set_id(cell.id);
    c.set_vcpus(cell.vcpus.format());
  }
  for (const DomainRequest::MemoryPart& part : r.memoryParts) {
    v1::MemoryPart& p = *out.add_memory_parts();
    p.set_guest_cell(part.cell);
    p.set_bytes(part.bytes);
    p.set_page_size(part.pageSize);
    for (int node : part.hostNodes) p.add_host_nodes(node);
    p.set_device(part.device);
  }
  out.set_align_cells(r.alignCells);
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
