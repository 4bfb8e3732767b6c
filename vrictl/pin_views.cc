#include "vrictl/pin_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace vri::ctl {

namespace {

// virsh's columns, and what the thread holds before its CPU list, which may be long.
std::string affinityRow(const std::string& thread, const std::string& cpus, const std::string& holds) {
  return fmt::format("{:<9} {:<21} {}\n", thread, holds, cpus);
}

std::string header(const std::string& first) {
  return affinityRow(first, "CPU AFFINITY", "HOLDS") + std::string(48, '-') + "\n";
}

}  // namespace

std::string formatVcpuPins(const v1::VmInfo& vm, std::optional<int> vcpu) {
  const v1::VmAllocation& a = vm.allocation();
  const auto& online = a.online_vcpus();
  std::string out = header("VCPU");
  for (int id = 0; id < a.vcpu_cpus_size(); ++id) {
    if (vcpu && *vcpu != id) continue;
    const int cpu = a.vcpu_cpus(id);
    const bool offline = !online.empty() && std::find(online.begin(), online.end(), id) == online.end();
    out += affinityRow(std::to_string(id), cpu < 0 ? a.shared_cpus() : std::to_string(cpu),
                       std::string(cpu < 0 ? "shared pool" : "own CPU") + (offline ? ", offline" : ""));
  }
  return out;
}

std::string formatEmulatorPin(const v1::VmInfo& vm) {
  const v1::VmAllocation& a = vm.allocation();
  const bool shared = a.emulator_cpus().empty();
  return header("THREAD") +
         affinityRow("emulator", shared ? a.shared_cpus() : a.emulator_cpus(), shared ? "shared pool" : "own CPU");
}

std::string formatNumatune(const v1::VmInfo& vm) {
  const v1::VmAllocation& a = vm.allocation();
  if (a.cpuset_mems().empty()) {
    return "Memory is not bound to NUMA nodes: the kernel places it wherever the VM's CPUs ask.\n";
  }
  std::string out = fmt::format("{:<22} {}\n{:<22} {}\n", "Mode:", "strict", "Nodeset:", a.cpuset_mems());
  for (const auto& [cell, nodes] : std::map<int32_t, std::string>(a.cell_nodes().begin(), a.cell_nodes().end())) {
    out += fmt::format("{:<22} {}\n", "Guest cell " + std::to_string(cell) + ":", "nodes " + nodes);
  }
  return out + "VRI does not move a running VM's bound memory; its vCPUs stay on these nodes.\n";
}

std::string formatLiveOutcome(const v1::MoveVmReply& reply) {
  switch (reply.live()) {
    case v1::MoveVmReply::PENDING:
      return "pending: the ledger and the cgroups moved, libvirt's pins not yet (" + reply.live_detail() +
             "); vrid retries until libvirt holds them\n";
    case v1::MoveVmReply::DEFINITION_FAILED:
      return "the live pins moved, but the persistent definition was not changed: " + reply.live_detail() + "\n";
    case v1::MoveVmReply::NO_LIBVIRT:
      return "note: vrid does not manage libvirt's pins (no libvirt_uri): only the cgroups moved\n";
    default: return "";
  }
}

}  // namespace vri::ctl
