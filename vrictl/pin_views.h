// The views of where a VM's threads and memory are: vcpupin, emulatorpin,
// numatune, and what a live move left libvirt holding.
#pragma once

#include <optional>
#include <string>

#include "proto/vri.pb.h"

namespace vri::ctl {

// Every vCPU id (offline ones too), or only `vcpu`: its CPUs and whether it holds one of its own.
std::string formatVcpuPins(const v1::VmInfo& vm, std::optional<int> vcpu = std::nullopt);
std::string formatEmulatorPin(const v1::VmInfo& vm);
std::string formatNumatune(const v1::VmInfo& vm);
// One line on libvirt's side of a move; empty when libvirt holds the ledger's pins.
std::string formatLiveOutcome(const v1::MoveVmReply& reply);

}  // namespace vri::ctl
