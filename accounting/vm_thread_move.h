// Live changes of a running VM: a move of one of its threads (a vCPU or the
// emulator) onto one host CPU of its own or back onto the shared pool, and vCPUs
// brought online or offline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "accounting/vm_cpu_placement.h"

namespace vri {

struct VmThreadMove {
  enum class Thread { kVcpu, kEmulator };
  Thread thread = Thread::kVcpu;
  int id = 0;              // the vCPU id (kVcpu)
  std::optional<int> cpu;  // its own host CPU; nullopt: the shared pool

  // "vCPU 2" or "the emulator", for messages.
  std::string name() const { return thread == Thread::kVcpu ? "vCPU " + std::to_string(id) : "the emulator"; }
};

// What bringing vCPUs online or offline left: the placement, and why a vCPU
// the request dedicates runs on the shared pool after all.
struct VcpusOnline {
  VmCpuPlacement placement;
  std::vector<std::string> notes;
};

}  // namespace vri
