#include "vrictl/pin_commands.h"
#include "vrictl/printable.h"

#include <charconv>
#include <ostream>

#include "vrictl/pin_views.h"
#include "vrictl/report_views.h"

namespace vri::ctl {

const char kVcpupinFooter[] =
    "With VCPU and CPULIST, moves the vCPU while the VM runs:\n"
    "  - a vCPU that holds a CPU of its own moves to the one CPU given;\n"
    "  - a vCPU on the shared pool given a CPU takes it exclusively: the VM becomes mixed\n"
    "    (dedicated once every vCPU holds one); 'shared' gives a vCPU's CPU back to the pool;\n"
    "  - one CPU per vCPU: the ledger holds one CPU for each dedicated vCPU, so a set is refused;\n"
    "  - a CPU another dedicated vCPU of the same VM holds is swapped with it; reserved CPUs,\n"
    "    other tenants' CPUs and CPUs off the nodes of the VM's bound memory are refused.\n"
    "vrid records the move, writes the cgroups, then sets libvirt's live pins and VRI's record of\n"
    "them in the domain's metadata, so a save/restore or a migration is placed afresh. If libvirt\n"
    "does not take the pins, the move stands: vrictl says 'pending' and exits 1, and vrid retries\n"
    "until libvirt holds them. --config makes the change in the persistent definition too.";

const char kEmulatorpinFooter[] =
    "With CPULIST, moves the emulator while the VM runs: given one CPU it holds that CPU exclusively\n"
    "(as emulator-threads='isolate'), 'shared' puts it back on the shared pool. The same rules and\n"
    "the same 'pending' as vcpupin.";

namespace {

Result<v1::VmInfo> fetchVm(CommandContext& c, const std::string& domain) {
  v1::GetTenantRequest request;
  request.set_vm(domain);
  auto tenant = c.vrid().tenant(request);
  if (!tenant.ok()) return tenant.error();
  return tenant->vm();
}

// The move's reply as `view` shows the VM, then libvirt's side of it.
int move(CommandContext& c, const PinChoices& p, v1::MoveVmRequest request,
         const std::function<std::string(const v1::VmInfo&)>& view) {
  request.set_vm(p.domain);
  request.set_config(p.config);
  auto reply = c.vrid().moveVm(request);
  if (!reply.ok()) return reportFailure(c, reply.error());
  c.out << (p.json ? toJson(*reply) + "\n" : view(printable(reply->vm())));
  const std::string live = formatLiveOutcome(printable(*reply));
  if (reply->live() == v1::MoveVmReply::PENDING || reply->live() == v1::MoveVmReply::DEFINITION_FAILED) {
    c.err << "vrictl: " << live;
    return kExitFailed;
  }
  if (!p.json) c.out << live;
  return kExitOk;
}

}  // namespace

namespace {

// vcpupin and emulatorpin: without a CPULIST, `view` of the VM (after `refuse`, which may find the
// command line asks for what the VM lacks); with one, the move of `thread`.
using VmView = std::function<std::string(const v1::VmInfo&)>;
int showOrMove(CommandContext& c, const PinChoices& p, const std::string& command, v1::ThreadPin::Thread thread, int id,
               const VmView& view, const std::function<std::string(const v1::VmInfo&)>& refuse = {}) {
  if (p.cpulist.empty()) {
    if (p.config) {
      c.err << "vrictl: " << command << ": --config goes with a CPULIST to move to\n";
      return kExitUsage;
    }
    auto vm = fetchVm(c, p.domain);
    if (!vm.ok()) return reportFailure(c, vm.error());
    if (const std::string why = refuse ? refuse(printable(*vm)) : ""; !why.empty()) {
      c.err << "vrictl: " << why << "\n";
      return kExitFailed;
    }
    c.out << (p.json ? toJson(*vm) + "\n" : view(printable(*vm)));
    return kExitOk;
  }
  v1::MoveVmRequest request;
  v1::ThreadPin& pin = *request.add_pins();
  pin.set_thread(thread);
  pin.set_id(id);
  pin.set_cpus(p.cpulist);
  return move(c, p, request, view);
}

}  // namespace

int runVcpupin(CommandContext& c, const PinChoices& p) {
  std::optional<int> vcpu;
  if (!p.vcpu.empty()) {
    int id = -1;
    const auto [end, ec] = std::from_chars(p.vcpu.data(), p.vcpu.data() + p.vcpu.size(), id);
    if (ec != std::errc() || end != p.vcpu.data() + p.vcpu.size() || id < 0) {
      c.err << "vrictl: vcpupin: VCPU is a vCPU id (0, 1, ...), not '" << p.vcpu << "'\n";
      return kExitUsage;
    }
    vcpu = id;
  }
  return showOrMove(
      c, p, "vcpupin", v1::ThreadPin::VCPU, vcpu.value_or(0),
      [&](const v1::VmInfo& vm) { return formatVcpuPins(vm, vcpu); },
      [&](const v1::VmInfo& vm) {
        return vcpu && *vcpu >= vm.allocation().vcpu_cpus_size()
                   ? "VM " + vm.name() + " has no vCPU " + std::to_string(*vcpu)
                   : std::string();
      });
}

int runEmulatorpin(CommandContext& c, const PinChoices& p) {
  return showOrMove(c, p, "emulatorpin", v1::ThreadPin::EMULATOR, 0, formatEmulatorPin);
}

int runNumatune(CommandContext& c, const PinChoices& p) {
  if (!p.nodeset.empty()) {
    c.err << "vrictl: numatune: VRI does not move a running VM's NUMA-bound memory: the ledger accounts it on the "
             "nodes it was admitted on. Change <numatune> in the definition; it applies at the next start.\n";
    return kExitFailed;
  }
  auto vm = fetchVm(c, p.domain);
  if (!vm.ok()) return reportFailure(c, vm.error());
  c.out << (p.json ? toJson(*vm) + "\n" : formatNumatune(printable(*vm)));
  return kExitOk;
}

}  // namespace vri::ctl
