// Where libvirt puts a QEMU VM's cgroups, and how to find them from its pid.
//
//   systemd:    <partition>/machine-qemu\x2d<id>\x2d<name>.scope[/libvirt]/{vcpuN,emulator,iothreadN}
//   no systemd: <partition>/qemu-<id>-<name>.libvirt-qemu/{vcpuN,emulator,iothreadN}
//
// The partition is machine.slice (or system.slice/machine.slice, or a custom
// one) under systemd and "machine" without. The scope name is lossy and the id
// changes at every start, so VRI never rebuilds it to find a VM: it reads
// /proc/<qemu pid>/cgroup (vmScopeFromProcCgroup). The namer builds names for
// tests and reports.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/iothread_id.h"

namespace vri {

enum class LibvirtLayout {
  kSystemd,                  // threads directly under the scope (libvirt < 7.1)
  kSystemdWithLibvirtLevel,  // threads under <scope>/libvirt (libvirt >= 7.1)
  kNoSystemd,                // the machine/ partition, threads under the .libvirt-qemu directory
};
Result<LibvirtLayout> parseLibvirtLayout(std::string_view text);  // "systemd" | "systemd-libvirt-level" | "no-systemd"
std::string_view libvirtLayoutName(LibvirtLayout layout);

// libvirt's machine name "qemu-<id>-<name>": only [A-Za-z0-9.-] of the name
// are kept, runs of '.'/'-' collapse into their first, leading ones are
// dropped, the whole stops growing at 64 characters, and trailing '.'/'-' are trimmed.
std::string libvirtMachineName(int id, std::string_view name);

// systemd unit-name escaping as libvirt does it: '/' -> '-', and '-', '\' and
// anything outside [A-Za-z0-9:_.] -> "\xNN".
std::string systemdEscape(std::string_view name);

class LibvirtNamer {
 public:
  LibvirtNamer(LibvirtLayout layout, CgroupPath partition) : layout_(layout), partition_(std::move(partition)) {}

  const CgroupPath& partition() const { return partition_; }
  LibvirtLayout layout() const { return layout_; }
  Result<CgroupPath> scope(int id, std::string_view name) const;
  // Where the vcpuN/emulator/iothreadN groups live under a scope.
  CgroupPath threadParent(const CgroupPath& scope) const;
  CgroupPath vcpu(const CgroupPath& scope, int index) const;
  CgroupPath emulator(const CgroupPath& scope) const;
  CgroupPath iothread(const CgroupPath& scope, IothreadId id) const;

 private:
  LibvirtLayout layout_;
  CgroupPath partition_;
};

// The VM scope holding a QEMU process, from /proc/<pid>/cgroup text: the
// line of `controller` (v1, e.g. "cpuset") or the "0::" line (v2 when
// controller is empty), with a trailing emulator/vcpuN/iothreadN (and libvirt)
// level removed. Refuses a process outside `partition`.
Result<CgroupPath> vmScopeFromProcCgroup(std::string_view procCgroup, std::string_view controller,
                                         const CgroupPath& partition);

}  // namespace vri
