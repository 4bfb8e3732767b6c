// DomainXml: what VRI reads from a libvirt domain definition, and the strict
// parser that reads it.
//
// Units follow libvirt (memory in KiB unless `unit` says otherwise; hugepage
// sizes likewise). Names and UUIDs are validated here, so nothing downstream
// sees a name with '/' or "..".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/cpuset.h"
#include "base/result.h"
#include "cgroup-model/iothread_id.h"

namespace vri {

// VRI's own element in <metadata>; docs/operating.md gives its schema.
inline constexpr std::string_view kVriXmlNamespace = "urn:vri:domain:1";
inline constexpr std::string_view kVriXmlPrefix = "vri";

struct GuestCpuTopology {
  int sockets = 0;  // 0: the XML has no <cpu><topology>
  int dies = 1;
  int cores = 0;
  int threads = 1;
};

struct DomainCputune {
  std::map<int, CpuSet> vcpupins;  // vCPU id -> CPUs
  std::optional<CpuSet> emulatorpin;
  std::map<IothreadId, CpuSet> iothreadpins;  // iothread id -> CPUs
  std::optional<uint64_t> shares;
  std::optional<uint64_t> period;
  std::optional<int64_t> quota;
};

struct DomainNumatune {
  std::string mode = "strict";  // strict | preferred | interleave | restrictive
  CpuSet nodeset;               // empty: libvirt/numad chooses (placement='auto')
};

// <cpu><numa><cell>: a guest NUMA cell.
struct DomainCell {
  int id = 0;
  CpuSet vcpus;
  uint64_t memoryBytes = 0;
};

// <memoryBacking><hugepages><page>: a page size for the guest cells in
// `cells` (guest cell ids; empty: every cell no other page names).
struct DomainHugepage {
  uint64_t sizeBytes = 0;
  CpuSet cells;
};

// <devices><memory>: a memory device (dimm, virtio-mem, ...), counted in <memory>. An sgx-epc
// device is neither counted in <memory> nor RAM, and is not read.
struct DomainMemoryDevice {
  std::string model;
  uint64_t sizeBytes = 0;
  std::optional<int> cell;     // <target><node>
  uint64_t pageSizeBytes = 0;  // <source><pagesize>; 0: the cell's
  CpuSet nodemask;             // <source><nodemask>: host nodes; empty: the cell's binding
  std::string sourcePath;      // <source><path> of a file-backed model: the file QEMU maps
  // Backed by a file, not by the host's memory: nvdimm and virtio-pmem (a dimm's <path> is ignored by libvirt).
  bool fileBacked() const { return model == "nvdimm" || model == "virtio-pmem"; }
};

// The placement VRI wrote into <cputune>, as recorded in its metadata: if the
// pins still read so, they are VRI's and not the user's. A thread on the shared
// pool is recorded as such (an empty set here, pool='shared' in the XML) and
// matches whatever pins it holds, since the pool moves without the record being rewritten.
struct VriPlacementMark {
  std::map<int, CpuSet> vcpupins;
  std::optional<CpuSet> emulatorpin;
  std::map<IothreadId, CpuSet> iothreadpins;

  bool operator==(const VriPlacementMark&) const = default;
};

struct VriDomainMetadata {
  std::string cpuPolicy;        // "", shared, dedicated, mixed
  CpuSet dedicatedVcpus;        // with mixed: the dedicated vCPU ids
  std::string threadPolicy;     // "", prefer, isolate, require
  std::string emulatorThreads;  // "", shared, isolate
  std::string iothreadPolicy;   // "", shared, isolate
  std::optional<VriPlacementMark> placement;
  // With placement, written by vriMetadataElement only: the definition's <own-numatune> record as
  // ownNumatuneRecordOf gives it, so that a rewrite of the record keeps it.
  std::string ownNumatuneRecord;
};

struct DomainXml {
  std::string name;
  std::string uuid;       // lower case
  std::optional<int> id;  // live XML of a running domain
  int maxVcpus = 0;
  int currentVcpus = 0;
  // The ids of the vCPUs libvirt starts: <vcpus><vcpu id enabled='yes'> when
  // given, else 0 .. currentVcpus-1. Ascending, currentVcpus of them.
  std::vector<int> onlineVcpus;
  GuestCpuTopology cpuTopology;
  DomainCputune cputune;
  uint64_t memoryBytes = 0;         // <memory>: the most the guest can have
  uint64_t currentMemoryBytes = 0;  // <currentMemory>; = memoryBytes when absent
  bool hugepages = false;
  std::vector<DomainHugepage> hugepagePages;  // none with hugepages: the host's default size everywhere
  std::optional<DomainNumatune> numatune;
  std::map<int, DomainNumatune> memnodes;  // <numatune><memnode> by guest cell id
  std::vector<DomainCell> cells;
  std::vector<DomainMemoryDevice> memoryDevices;
  int iothreads = 0;
  std::vector<IothreadId> iothreadIds;  // <iothreadids>, the rest numbered as libvirt does; ascending
  VriDomainMetadata vri;

  // True when <cputune>'s pins are the ones VRI recorded writing.
  bool pinsAreVris() const;
  bool hasUserPins() const { return !cputune.vcpupins.empty() && !pinsAreVris(); }
};

Result<DomainXml> parseDomainXml(std::string_view xml);

// libvirt's rule for names, plus what VRI needs for paths and messages.
Result<void> validateDomainName(std::string_view name);

}  // namespace vri
