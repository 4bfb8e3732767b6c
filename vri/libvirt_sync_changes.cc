// What changes a running VM outside VRI and reaches vrid through libvirt: vCPUs
// brought online or offline (virsh setvcpus --live), pins set behind VRI's
// back (virsh vcpupin --live), and VMs started without vrid's decision. All run
// on the libvirt worker.
#include "accounting/tenant_id.h"
#include "libvirt-bridge/domain_xml.h"
#include "vri/libvirt_sync.h"

namespace vri {

void LibvirtSync::checkVcpus(LibvirtSession& session) {
  vcpuCheckQueued_ = false;
  const StatePtr state = node_.state();
  for (const auto& [uuid, scope] : state->vmScopes) {
    const VmRecord* vm = state->vm(uuid);
    if (vm == nullptr || vm->defined || vcpuIdCount(vm->spec.cpu) < 2) continue;  // one vCPU: none to plug or unplug
    const auto count = session.liveVcpuCount(uuid);
    if (!count.ok() || *count == static_cast<int>(vm->placement.vcpuCpus.size())) continue;
    auto xml = session.domainXml(uuid, false);
    auto live = xml.ok() ? parseDomainXml(*xml) : Result<DomainXml>(xml.error());
    if (!live.ok()) {
      log_.warning("libvirt: vCPUs of VM " + uuid + " not read: " + live.error().message());
      continue;
    }
    auto changed = node_.vcpusOnline(uuid, live->onlineVcpus);
    if (!changed.ok()) continue;  // refused: said in the log and as an event
    const StatePtr now = node_.state();
    if (const VmRecord* placed = now->vm(uuid)) (void)pin(session, *placed, node_.wideSharedCpus(*now), true);
  }
}

void LibvirtSync::checkPins(LibvirtSession& session, const std::string& uuid) {
  const StatePtr state = node_.state();
  const VmRecord* vm = state->vm(uuid);
  if (vm == nullptr || vm->defined || state->vmScope(uuid) == nullptr || awaitsMove(uuid)) return;
  // Against what VRI last told libvirt: pins of VRI's that a shared-pool follow-up has yet to replace are not drift.
  const auto told = pinned_.find(uuid);
  if (told == pinned_.end()) return;  // not pinned by VRI since it connected: adopting it pins it
  auto xml = session.domainXml(uuid, false);
  auto live = xml.ok() ? parseDomainXml(*xml) : Result<DomainXml>(xml.error());
  if (!live.ok()) {
    log_.warning("libvirt: pins of VM " + uuid + " not checked: " + live.error().message());
    return;
  }
  const VmPins& ours = told->second.pins;
  const CpuSet shared = node_.wideSharedCpus(*state);
  std::string drift;
  std::vector<VmThreadMove> moves;
  bool adoptable = true;
  // One thread's pin: a drift line, and the move that adopts it (one CPU, or the shared pool).
  const auto compare = [&](const std::string& thread, const CpuSet& theirs, const CpuSet& mine,
                           std::optional<VmThreadMove> move) {
    if (theirs == mine) return;
    drift += (drift.empty() ? "" : "; ") + thread + " pinned to " + theirs.format() + " (VRI: " + mine.format() + ")";
    if (!move || (theirs != shared && theirs.count() != 1)) {
      adoptable = false;
      return;
    }
    if (theirs != shared) move->cpu = theirs.first();
    moves.push_back(*move);
  };
  for (const auto& [vcpu, mine] : ours.vcpus) {
    const auto theirs = live->cputune.vcpupins.find(vcpu);
    if (theirs == live->cputune.vcpupins.end()) continue;
    const bool online = vm->placement.vcpuCpus.contains(vcpu);
    compare("vCPU " + std::to_string(vcpu), theirs->second, mine,
            online ? std::optional<VmThreadMove>(VmThreadMove{VmThreadMove::Thread::kVcpu, vcpu, std::nullopt})
                   : std::nullopt);
  }
  if (live->cputune.emulatorpin) {
    compare("the emulator", *live->cputune.emulatorpin, ours.emulator,
            VmThreadMove{VmThreadMove::Thread::kEmulator, 0, std::nullopt});
  }
  for (const auto& [id, mine] : ours.iothreads) {
    const auto theirs = live->cputune.iothreadpins.find(id);
    if (theirs != live->cputune.iothreadpins.end()) compare("iothread " + std::to_string(id), theirs->second, mine, {});
  }
  if (drift.empty()) return;
  const std::string tenant = vmTenant(uuid);
  log_.warning("libvirt: VM " + uuid + ": " + drift + ", set behind VRI's back");
  std::string why = "libvirt_pin_drift is restore";
  if (options_.adoptPinDrift && !adoptable) why = "only one CPU, or the shared pool, can be adopted";
  if (options_.adoptPinDrift && adoptable) {
    auto moved = node_.moveVm(uuid, moves);
    if (moved.ok()) {
      node_.announce(EventKind::kPinsDrifted, tenant, drift + ": adopted");
      const StatePtr now = node_.state();
      if (const VmRecord* adopted = now->vm(uuid)) (void)pin(session, *adopted, node_.wideSharedCpus(*now), true);
      return;
    }
    why = moved.error().message();
  }
  node_.announce(EventKind::kPinsDrifted, tenant, drift + ": restored (" + why + ")");
  (void)pin(session, *vm, shared, true);
}

void LibvirtSync::adoptStarted(LibvirtSession& session, const std::string& uuid) {
  const auto xml = session.domainXml(uuid, false);
  if (!xml.ok()) {
    log_.warning("libvirt: VM " + uuid +
                 " started without vrid's decision and its XML was not read: " + xml.error().message());
    return;
  }
  log_.info("libvirt: VM " + uuid + " started without vrid's decision; adopting it");
  adopt(session, *xml);
}

void LibvirtSync::retryAdoption(LibvirtSession& session) {
  adoptionQueued_ = false;
  const std::set<std::string> waiting = unadopted_;
  for (const std::string& uuid : waiting) {
    const auto active = session.isActive(uuid);
    const auto xml =
        active.ok() && *active ? session.domainXml(uuid, false) : Result<std::string>(Error::notFound(uuid));
    if (!xml.ok()) {  // stopped or gone: libvirt's stopped event may not have reached us yet
      unadopted_.erase(uuid);
      continue;
    }
    adopt(session, *xml, true);
  }
  unadoptedCount_ = unadopted_.size();
}

}  // namespace vri
