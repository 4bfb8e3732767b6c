// Whether this kernel forms the cpuset partitions VRI's partition mode needs, found by forming one.
//
// The mode is chosen by what the kernel does, not by which files exist: a remote `root` partition
// (Linux 6.7+) in a cgroup VRI makes for the purpose, `/vri-partition-probe/cpus`, on one CPU of the
// shared pool, must read back `root`, hold that CPU alone, and take it out of the cgroup root's
// effective CPUs; everything is undone at once (the CPU leaves the other tenants for a few ms).
// Only a node whose kubepods sits directly below the cgroup root can use it: a remote partition
// needs cpuset.cpus.exclusive on every ancestor, and VRI writes none outside its own tree. A root
// that delegates no cpuset yet (no unit has asked for it since boot) is given it for the probe, and
// keeps it when partitions are used.
#pragma once

#include <string>

#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/kubelet_namer.h"

namespace vri {

struct PartitionProbe {
  bool usable = false;
  std::string reason;  // why not (or, when usable, what was found)
};

inline constexpr std::string_view kPartitionProbeCgroup = "vri-partition-probe";

// `fs` is the kernel's cgroupfs (not systemd's view); `sharedCpus` the CPUs the probe may borrow one of.
// An error only when the probe could not be undone.
Result<PartitionProbe> probeCpusetPartitions(CgroupFs& fs, const CgroupBackend& backend, const KubeletNamer& namer,
                                             const CpuSet& sharedCpus);

}  // namespace vri
