// A libvirt domain's request as the VM spec the ledger takes, and a VM's
// placement as libvirt's pins: vrid's own libvirt side, with no wire format
// in between (the hook speaks the API; vrid reads the domain itself).
#pragma once

#include "accounting/ledger_records.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/vm_pins.h"
#include "libvirt-bridge/vm_request.h"

namespace vri {

Result<VmSpec> vmSpecFrom(const DomainRequest& request);

// Shared threads (and offline vCPUs the user did not pin) go on the shared pool.
Result<VmPins> vmPinsOf(const VmCpuRequest& request, const VmCpuPlacement& placement, const CpuSet& shared);

// VRI's metadata for a running VM it placed: the request as <vri:cpu> (what a
// live move made of it included) and `pins` as <vri:placement>, so that the
// domain read back (a save image, a migration, vrid adopting it) asks for what
// the ledger holds and its pins read as VRI's, not the user's.
VriDomainMetadata vriMetadataOf(const VmCpuRequest& request, const VmPins& pins);

}  // namespace vri
