// VRI's pins taken back out of the definition of a domain that stopped. A
// definition VRI wrote its placement into (define-time, a restore, a migration)
// still names those CPUs after the VM stops, and the VM gives them back then:
// its next start would ask libvirt for CPUs another tenant may hold by now
// (libvirt fails the start: "cannot set CPU affinity"), and VRI's <numatune>
// would read as the domain's own binding. So the definition goes back to what
// the domain asked before, and the next start is placed afresh.
#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "vri/libvirt_sync.h"

namespace vri {

void LibvirtSync::unpinStopped(LibvirtSession& session, const std::string& uuid) {
  auto xml = session.domainXml(uuid, true);
  if (!xml.ok()) return;  // a transient domain, gone with its stop, or undefined meanwhile
  if (auto domain = parseDomainXml(*xml); domain.ok()) unpinDefinition(session, *domain, *xml);
}

void LibvirtSync::settleStoppedDomains(LibvirtSession& session) {
  auto xmls = session.stoppedDomainXmls();
  if (!xmls.ok()) {
    log_.warning("libvirt: " + xmls.error().message());
    return;
  }
  for (const std::string& xml : *xmls) {
    auto domain = parseDomainXml(xml);
    if (!domain.ok()) continue;
    // Admitted, and inactive to libvirt: it stopped while vrid was away. (A start makes the domain
    // active before its hook asks vrid, so a VM being started is never taken for one that stopped.
    // A VM libvirt does not know at all may be another client's: the release grace decides for it.)
    const StatePtr state = node_.state();
    if (const VmRecord* vm = state->vm(domain->uuid); vm != nullptr && !vm->defined) {
      if (const auto released = node_.releaseVm(domain->uuid); released.ok()) {
        log_.info("libvirt: " + domain->name + " is not running (it stopped while vrid was away); released");
      } else {
        log_.warning("libvirt: " + domain->name + " is not running; its release: " + released.error().message());
      }
    }
    unpinDefinition(session, *domain, xml);
  }
}

void LibvirtSync::unpinDefinition(LibvirtSession& session, const DomainXml& domain, const std::string& xml) {
  if (!domain.pinsAreVris()) return;  // nothing of VRI's, or the user's own pins now
  // A definition reserved in the ledger keeps its pins: they are the reservation's.
  if (onlyReserved(domain.uuid)) return;
  auto unpinned = withoutVriPins(xml);
  if (!unpinned.ok()) {
    log_.warning("libvirt: VRI's pins left in " + domain.name + "'s definition: " + unpinned.error().message());
    return;
  }
  ownDefines_.insert(domain.uuid);  // its define event is this one: no define-time placement for it
  if (auto defined = session.define(*unpinned); !defined.ok()) {
    ownDefines_.erase(domain.uuid);
    log_.warning("libvirt: VRI's pins left in " + domain.name + "'s definition: " + defined.error().message());
    return;
  }
  log_.info("libvirt: " + domain.name + " is not running: VRI's pins taken out of its definition, " +
            "it is placed afresh when it starts");
}

}  // namespace vri
