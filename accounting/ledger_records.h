// What the ledger records about each tenant: the request as admitted and the
// placement it got. Plain values; the ledger keeps them, the store persists them.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "accounting/numa_memory.h"
#include "accounting/vm_cpu_placement.h"
#include "base/cpuset.h"
#include "cgroup-model/kubelet_namer.h"

namespace vri {

struct ContainerSpec {
  std::string name;  // identity inside the pod: kubelet recreates a container under a new id
  std::string id;    // the runtime's current id
  bool init = false;
  int64_t cpuRequestMilli = 0;
  int64_t cpuLimitMilli = 0;  // 0: none
  std::optional<uint64_t> memoryLimitBytes;
  // The CRI carries no memory request; the shim recovers it from oom_score_adj.
  std::optional<uint64_t> memoryRequestBytes;
  // Hugepages: page size in bytes -> the limit in bytes (CRI's hugepage_limits, request = limit).
  // Sizes the container may not use are absent: kubelet's limit 0 means none, not unlimited.
  std::map<uint64_t, uint64_t> hugepageLimits = {};  // initialised, so that a brace list may end before it
};

struct ContainerRecord {
  ContainerSpec spec;
  CpuSet exclusive;     // empty: the shared pool
  MemoryBlocks memory;  // NUMA memory when the container is pinned; empty otherwise
};

struct PodSpec {
  std::string uid;   // identity
  std::string name;  // "namespace/name", for messages
  QosClass qos = QosClass::kBestEffort;
  int64_t overheadCpuMilli = 0;
  uint64_t overheadMemoryBytes = 0;
  // Outside kubelet's tree (its sandbox has no cgroup parent): the runtime places
  // its cgroups and VRI writes none; BestEffort here, on the shared pool, whatever
  // its containers ask. Its requests are shared demand but not kubepods'.
  bool outsideKubeletTree = false;
};

struct PodRecord {
  PodSpec spec;
  std::map<std::string, ContainerRecord> containers;  // by container name
  // The runtime's id of the pod's current sandbox (its pause container);
  // empty until the runtime names it. Its cgroup stays on the shared pool.
  std::string sandboxId;

  // A pod run through a CRI shim (its sandbox bound) loses containers only by
  // the runtime's removals, never for a missing cgroup: containerd drops an
  // exited container's cgroup while kubelet may still restart it after minutes
  // of back-off.
  bool containersGoOnlyByRuntime() const { return !sandboxId.empty(); }
};

// A guest NUMA cell (<cpu><numa><cell>): its id and the vCPU ids in it.
struct GuestCell {
  int id = 0;
  CpuSet vcpus;
  bool operator==(const GuestCell&) const = default;
};

// Guest memory that lies together: a guest cell's (or the whole guest's), or a
// memory device's, at one page size, and where the domain binds it.
struct VmMemoryPart {
  static constexpr int kNoCell = -1;
  int guestCell = kNoCell;
  uint64_t bytes = 0;
  uint64_t pageSize = 0;       // 0: regular memory
  std::vector<int> hostNodes;  // bound there (<memnode>, <numatune>, a device's nodemask); empty: VRI chooses
  bool device = false;         // a memory device's, not the cell's own memory (never its <memnode>)
  bool operator==(const VmMemoryPart&) const = default;
};

struct VmSpec {
  std::string uuid;                  // identity
  VmCpuRequest cpu;                  // cpu.name is the domain name, for messages
  uint64_t memoryBytes = 0;          // all of it, memory devices included
  uint64_t hugepageSize = 0;         // guest memory backed by hugepages of this size; 0: regular memory
  std::vector<int> strictNumaNodes;  // <numatune><memory mode="strict" nodeset=…>; empty: none
  std::vector<GuestCell> cells;      // empty: the guest has no NUMA cells
  // Empty: memoryBytes at hugepageSize, bound to strictNumaNodes (the form
  // without cells or mixed page sizes).
  std::vector<VmMemoryPart> memoryParts;
  // The caller writes VRI's placement back (<memnode>s included), so a
  // dedicated VM's cells may be placed one by one. Not part of the VM's identity.
  bool alignCells = false;
};

// "VM <name>", or "VM <uuid>" for one without a name: how messages name it.
std::string vmDisplayName(const VmSpec& vm);

// The spec's memory as parts, in either form.
std::vector<VmMemoryPart> memoryPartsOf(const VmSpec& vm);
// Refuses parts that do not add up to memoryBytes, name cells the VM lacks, or
// cells that overlap. (Each part's own amounts: checkVmAmounts.)
Result<void> validateMemoryParts(const VmSpec& vm);

struct VmRecord {
  VmSpec spec;
  VmCpuPlacement placement;
  MemoryBlocks memory;   // NUMA memory of a NUMA-bound VM; empty otherwise
  bool defined = false;  // reserved for a VM that is defined but not running yet
};

// "0:0:1073741824;1:2097152:4194304" (node:resource:bytes), and back.
std::string encodeMemoryBlocks(const MemoryBlocks& blocks);
Result<MemoryBlocks> decodeMemoryBlocks(std::string_view text);

// The exclusive CPUs kubelet's static policy gives a container: Guaranteed
// pod, an integer CPU request equal to the limit. 0 means the shared pool.
int exclusiveCpusFor(const PodSpec& pod, const ContainerSpec& container);

// The pod's memory as admitted: each container's limit, else its recovered
// request, plus the pod overhead.
uint64_t podMemoryBytes(const PodRecord& pod);

// Line-based text forms for the store ("key=value" lines, values
// percent-escaped), strict on the way back in.
std::string encodePod(const PodRecord& pod);
Result<PodRecord> decodePod(std::string_view text);
std::string encodeVm(const VmRecord& vm);
Result<VmRecord> decodeVm(std::string_view text);

}  // namespace vri
