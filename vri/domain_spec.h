// A libvirt domain's request as the VM spec the ledger takes, and a VM's
// placement as libvirt's pins: vrid's own libvirt side, with no wire format
// in between (the hook speaks the API; vrid reads the domain itself).
#pragma once

#include "accounting/ledger_records.h"
#include "libvirt-bridge/vm_pins.h"
#include "libvirt-bridge/vm_request.h"

namespace vri {

Result<VmSpec> vmSpecFrom(const DomainRequest& request);

// Shared threads (and offline vCPUs the user did not pin) go on the shared pool.
Result<VmPins> vmPinsOf(const VmCpuRequest& request, const VmCpuPlacement& placement, const CpuSet& shared);

}  // namespace vri
