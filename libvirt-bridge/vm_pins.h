// VmPins: a VM's placement as libvirt's pins (one CPU set per vCPU, for the
// emulator and per iothread), with shared threads on the shared pool.
#pragma once

#include <map>
#include <set>

#include "cgroup-model/iothread_id.h"

#include "base/cpuset.h"
#include "base/result.h"
#include "proto/vri.pb.h"

namespace vri {

struct VmPins {
  std::map<int, CpuSet> vcpus;  // every vCPU id the domain has, offline ones included
  CpuSet emulator;
  std::map<IothreadId, CpuSet> iothreads;  // by iothread id
  CpuSet mems;                             // empty: no NUMA binding
  std::map<int, CpuSet> cellNodes;         // guest cell -> host nodes, written as <memnode>s
  // The threads on the shared pool: their pins are the pool as it is now.
  CpuSet sharedVcpus;
  bool sharedEmulator = false;
  std::set<IothreadId> sharedIothreads;

  bool operator==(const VmPins&) const = default;
};

Result<VmPins> vmPinsFrom(const v1::VmAllocation& allocation);

}  // namespace vri
