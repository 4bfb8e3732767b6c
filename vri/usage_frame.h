// One round of usage samples: every tenant's counters and rates, and each CPU's busy time, as the
// sampler read them at one moment. Frames are immutable once published; readers (the API, the
// metrics endpoint) share them without copying.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/usage_counters.h"

namespace vri {

enum class TenantKind { kPod, kVm };
inline const char* tenantKindName(TenantKind kind) { return kind == TenantKind::kPod ? "pod" : "vm"; }

// Who a series belongs to; shared by every frame while the tenant and its cgroup stay the same.
struct TenantLabel {
  std::string key;  // "pod/<uid>" | "vm/<uuid>"
  TenantKind kind = TenantKind::kPod;
  std::string id;                    // the pod's UID, the VM's UUID
  std::string name;                  // "namespace/name", the domain name
  std::optional<CgroupPath> cgroup;  // nullopt: none to read (not started, outside kubelet's tree)
};

struct TenantSample {
  std::shared_ptr<const TenantLabel> label;
  bool measured = false;  // the CPU counters were read in this round
  CpuCounters cpu;        // cumulative, as the kernel counts them
  std::optional<uint64_t> memoryBytes;
  bool rates = false;            // the two rates below cover an interval (not on a tenant's first round)
  double cpuCores = 0;           // CPU time per wall time over the last interval
  double throttledFraction = 0;  // throttled periods / periods over the last interval (0 without periods)
};

struct CpuSample {
  int cpu = 0;
  uint64_t busyNs = 0;  // cumulative, from /proc/stat
  double busy = 0;      // busy fraction over the last interval
};

struct UsageFrame {
  uint64_t sequence = 0;  // 1 for the first round
  std::chrono::system_clock::time_point at;
  std::chrono::milliseconds interval{0};  // the configured interval
  std::vector<TenantSample> tenants;      // sorted by key
  std::vector<CpuSample> cpus;

  const TenantSample* find(const std::string& key) const;
};

using FramePtr = std::shared_ptr<const UsageFrame>;

}  // namespace vri
