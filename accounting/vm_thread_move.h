// A live move of one of a running VM's threads: a vCPU or the emulator, onto
// one host CPU of its own or back onto the shared pool.
#pragma once

#include <optional>
#include <string>

namespace vri {

struct VmThreadMove {
  enum class Thread { kVcpu, kEmulator };
  Thread thread = Thread::kVcpu;
  int id = 0;              // the vCPU id (kVcpu)
  std::optional<int> cpu;  // its own host CPU; nullopt: the shared pool

  // "vCPU 2" or "the emulator", for messages.
  std::string name() const { return thread == Thread::kVcpu ? "vCPU " + std::to_string(id) : "the emulator"; }
};

}  // namespace vri
