// What a domain asks of VRI, from its definition.
//
// Precedence: the user's own <vcpupin> pins (each vCPU on one CPU) mean
// exactly those CPUs; pins VRI wrote itself (recorded in its metadata) are
// ignored, so a saved image or migration stream is placed afresh; otherwise
// <vri:cpu> in <metadata> asks for a policy; no tuning at all is a shared VM.
// Memory is always a hard request: <memory>, to which vrid adds its overhead.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "libvirt-bridge/domain_xml.h"
#include "proto/vri.pb.h"

namespace vri {

inline constexpr uint64_t kDefaultHugepageBytes = 2ULL << 20;  // x86-64's default hugepage size
inline constexpr uint64_t kSystemPageBytes = 4096;             // a "page" of this size is ordinary memory

// A domain's request in VRI's own terms, before any wire format: vrid's
// libvirt side reads it as it is, the hook sends it as an AdmitVmRequest.
struct DomainRequest {
  enum class CpuPolicy { kShared, kDedicated, kMixed };
  enum class ThreadPolicy { kUnset, kPrefer, kIsolate, kRequire };
  std::string uuid;
  std::string name;
  int vcpus = 1;                 // online at start
  std::vector<int> onlineVcpus;  // their ids
  int maxVcpus = 1;              // every vCPU id the domain has
  int guestThreadsPerCore = 1;
  CpuPolicy cpuPolicy = CpuPolicy::kShared;
  std::vector<int> mixedDedicatedVcpus;
  ThreadPolicy threadPolicy = ThreadPolicy::kUnset;
  bool isolateEmulator = false;
  int iothreads = 0;
  std::vector<IothreadId> iothreadIds;
  bool isolateIothreads = false;
  uint64_t memoryBytes = 0;
  uint64_t hugepageSize = 0;  // 0: regular memory
  std::vector<int> strictNumaNodes;
  struct Cell {
    int id = 0;
    CpuSet vcpus;
  };
  struct MemoryPart {
    int cell = -1;  // -1: not in a guest cell
    uint64_t bytes = 0;
    uint64_t pageSize = 0;  // 0: regular memory
    std::vector<int> hostNodes;
    bool device = false;  // a memory device's (dimm, virtio-mem), not the cell's own memory
  };
  std::vector<Cell> cells;
  // Empty: memoryBytes at hugepageSize on strictNumaNodes. Otherwise they add up to memoryBytes.
  std::vector<MemoryPart> memoryParts;
  bool alignCells = false;          // the caller writes VRI's placement back
  std::vector<int> pinnedVcpuCpus;  // the user's <vcpupin>s: index = vCPU id, its CPU or -1; empty: none
};

Result<DomainRequest> domainRequest(const DomainXml& domain);
// The hook's wire form of a request.
v1::AdmitVmRequest admitVmRequest(const DomainRequest& request);
// Both at once.
Result<v1::AdmitVmRequest> vmRequestFromDomain(const DomainXml& domain);

}  // namespace vri
