// Writes VRI's placement into a domain definition: <cputune>'s vcpupin,
// emulatorpin and iothreadpin replaced, <numatune> set when the memory is
// NUMA-bound, and the same pins recorded under <metadata><vri:domain>
// <vri:placement> so that they are read back as VRI's, not the user's (with
// the domain's own <numatune> from before, for withoutVriPins).
// Everything else in the document (shares, quota, devices) is kept.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/vm_pins.h"

namespace vri {

Result<std::string> writeVriPins(std::string_view domainXml, const VmPins& pins);

// The definition as it was before VRI wrote its placement: VRI's pins out of <cputune> (an
// emptied <cputune> with them), the domain's own <numatune> back in place of VRI's, and the
// <vri:placement> record gone. For a domain that stopped: a definition keeps no pins to CPUs that
// are no longer its own, and the next start is placed afresh. The caller checks that the pins are
// still VRI's (DomainXml::pinsAreVris); without a <vri:placement>, a refusal.
Result<std::string> withoutVriPins(std::string_view domainXml);

// The <vri:placement> record writeVriPins leaves for `pins`.
VriPlacementMark placementMark(const VmPins& pins);

// VRI's whole metadata element, <domain> with its <cpu> and <placement>, without
// a namespace: what virDomainSetMetadata takes (it puts the element into VRI's
// namespace), for a running domain whose pins VRI sets live.
std::string vriMetadataElement(const VriDomainMetadata& metadata);

// The definition's record of the domain's own <numatune> (writeVriPins keeps it under
// <vri:placement>) as VriDomainMetadata::ownNumatuneRecord carries it; empty without one. A
// placement VRI writes again into the definition through the metadata alone (a move with
// --config) keeps it, so that the stop still puts the domain's own <numatune> back.
Result<std::string> ownNumatuneRecordOf(std::string_view domainXml);

}  // namespace vri
