// A libvirt domain definition, as the hook reads it from stdin and vrid from libvirt, with VRI's
// pins written back and read again (the migrate and restore path). A definition VRI takes must
// come back from the rewrite with the same guest (name, UUID, vCPUs, memory, cells, iothreads),
// the pins it wrote read as VRI's, the same request, and a second rewrite must change nothing.
// The leading byte shapes the pins: where the vCPUs go, and whether memory is NUMA-bound.
#include "fuzz/fuzz_input.h"
#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/vm_request.h"

using namespace vri;

namespace {

// Pins for every vCPU, the emulator and every iothread of `domain`, as vrid could answer them.
VmPins pinsFor(const DomainXml& domain, uint8_t shape) {
  VmPins pins;
  const int spread = 1 + (shape & 0x7);  // vCPU i on CPU i % spread, or all on one CPU
  for (int vcpu = 0; vcpu < domain.maxVcpus; ++vcpu) pins.vcpus[vcpu] = CpuSet{vcpu % spread};
  pins.emulator = (shape & 0x8) ? CpuSet{0} : CpuSet{0, 1};
  for (IothreadId id : domain.iothreadIds) pins.iothreads[id] = CpuSet{1};
  if (shape & 0x10) {
    pins.mems = CpuSet{0};
    for (const DomainCell& cell : domain.cells) pins.cellNodes[cell.id] = CpuSet{0};
  }
  return pins;
}

bool sameGuest(const DomainXml& a, const DomainXml& b) {
  if (a.name != b.name || a.uuid != b.uuid || a.id != b.id || a.maxVcpus != b.maxVcpus ||
      a.currentVcpus != b.currentVcpus || a.onlineVcpus != b.onlineVcpus || a.memoryBytes != b.memoryBytes ||
      a.currentMemoryBytes != b.currentMemoryBytes || a.hugepages != b.hugepages || a.iothreads != b.iothreads ||
      a.iothreadIds != b.iothreadIds || a.cells.size() != b.cells.size() ||
      a.memoryDevices.size() != b.memoryDevices.size() || a.cputune.shares != b.cputune.shares ||
      a.cputune.period != b.cputune.period || a.cputune.quota != b.cputune.quota ||
      a.vri.cpuPolicy != b.vri.cpuPolicy || a.vri.dedicatedVcpus != b.vri.dedicatedVcpus ||
      a.vri.threadPolicy != b.vri.threadPolicy || a.vri.emulatorThreads != b.vri.emulatorThreads ||
      a.vri.iothreadPolicy != b.vri.iothreadPolicy) {
    return false;
  }
  for (size_t i = 0; i < a.cells.size(); ++i) {
    if (a.cells[i].id != b.cells[i].id || a.cells[i].vcpus != b.cells[i].vcpus ||
        a.cells[i].memoryBytes != b.cells[i].memoryBytes) {
      return false;
    }
  }
  return true;
}

// The request without what the rewrite may change: the user's pins (replaced by VRI's) and, when
// VRI bound memory, the host nodes it named.
v1::AdmitVmRequest withoutPlacement(v1::AdmitVmRequest request, bool memoryBound) {
  request.clear_pinned_vcpu_cpus();
  if (memoryBound) {
    request.clear_strict_numa_nodes();
    for (auto& part : *request.mutable_memory_parts()) part.clear_host_nodes();
  }
  return request;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  const Result<DomainXml> domain = parseDomainXml(in.text);
  if (!domain.ok()) return 0;
  const Result<v1::AdmitVmRequest> request = vmRequestFromDomain(*domain);

  const VmPins pins = pinsFor(*domain, in.kind);
  const Result<std::string> rewritten = writeVriPins(in.text, pins);
  if (!rewritten.ok()) std::fprintf(stderr, "%s\n", rewritten.error().message().c_str());
  VRI_FUZZ_CHECK(rewritten.ok());

  const Result<DomainXml> reread = parseDomainXml(*rewritten);
  if (!reread.ok()) std::fprintf(stderr, "%s\n", reread.error().message().c_str());
  VRI_FUZZ_CHECK(reread.ok());
  VRI_FUZZ_CHECK(sameGuest(*domain, *reread));
  VRI_FUZZ_CHECK(reread->pinsAreVris());
  VRI_FUZZ_CHECK(!reread->hasUserPins());
  VRI_FUZZ_CHECK(reread->vri.placement == placementMark(pins));
  VRI_FUZZ_CHECK(reread->cputune.vcpupins == pins.vcpus);
  VRI_FUZZ_CHECK(reread->cputune.emulatorpin == pins.emulator);
  VRI_FUZZ_CHECK(reread->cputune.iothreadpins == pins.iothreads);
  if (!pins.mems.empty()) VRI_FUZZ_CHECK(reread->numatune && reread->numatune->nodeset == pins.mems);

  // The same VM asks the same of vrid after the rewrite, but for the placement VRI wrote. (The
  // user's own pins decide the request and VRI never rewrites them: the hook leaves such a
  // definition as it is.)
  const Result<v1::AdmitVmRequest> again = vmRequestFromDomain(*reread);
  if (request.ok() && !domain->hasUserPins()) {
    if (!again.ok()) std::fprintf(stderr, "%s\n", again.error().message().c_str());
    VRI_FUZZ_CHECK(again.ok());
    const bool bound = !pins.mems.empty();
    const std::string before = withoutPlacement(*request, bound).DebugString();
    const std::string after = withoutPlacement(*again, bound).DebugString();
    if (before != after) std::fprintf(stderr, "before the rewrite:\n%s\nafter:\n%s", before.c_str(), after.c_str());
    VRI_FUZZ_CHECK(before == after);
  }

  // A second rewrite with the same pins is the identity.
  const Result<std::string> twice = writeVriPins(*rewritten, pins);
  VRI_FUZZ_CHECK(twice.ok());
  VRI_FUZZ_CHECK(*twice == *rewritten);
  return 0;
}
