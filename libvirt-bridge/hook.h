// vri-hook's logic: libvirt's qemu hook (`<domain> <operation> <sub-op> <extra>`
// with the domain XML on stdin) turned into calls on vrid.
//
//   prepare begin            admit (idempotent by UUID); refused: exit 1 with the reason
//   started begin            VmStarted with QEMU's pid: vrid writes the vCPU,
//                            emulator and iothread cpusets before answering
//   stopped end, release end release
//   reconnect begin          admit again (idempotent) and VmStarted; never fails
//   migrate begin, restore begin
//                            admit, then print the XML with <cputune> rewritten to
//                            this host's placement, marked as VRI's
//   anything else            exit 0 at once
//
// Every call has the configured deadline. When vrid cannot be reached in
// time, a VM that needs exclusive CPUs fails to start with a message saying
// so; a shared VM starts (or not: `when_unreachable`) and vrid adopts it once
// it is back. The hook never calls libvirt: libvirt is waiting for it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "libvirt-bridge/hook_config.h"
#include "libvirt-bridge/hook_operation.h"
#include "libvirt-bridge/hook_vrid.h"

namespace vri {

struct HookOutcome {
  int exitCode = 0;
  std::string out;  // stdout: a rewritten domain XML for migrate/restore
  std::string err;  // stderr: one line, shown by `virsh start`
};

// `args`: argv[1..], as libvirt passes them.
HookOutcome runHook(const HookConfig& config, const std::vector<std::string>& args, std::string_view domainXml,
                    HookVrid& vrid);

}  // namespace vri
