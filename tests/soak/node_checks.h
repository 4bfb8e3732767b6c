// What must hold on a soak's node after every fault, once vrid is up again and has reconciled:
//   - no CPU is held exclusively by two tenants, in the ledger or in the kernel (a container's
//     cpuset, a vCPU's pin);
//   - every acknowledged tenant is running and in the ledger; the ledger holds exactly the VMs
//     libvirt runs and the pods containerd runs (no row left behind, none lost);
//   - ledger, kernel, containerd and `virsh vcpupin` agree, and a dry-run reconcile finds no drift;
//   - nothing leaked: no QEMU of a domain libvirt does not run, no process in the pods' cgroups but
//     their containers' and sandboxes', no cgroup below VRI's roots that the ledger does not know.
// Each violation is one line naming what disagrees with what.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "tests/soak/soak_node.h"
#include "tests/soak/tenants.h"

namespace vri::soak {

struct Violation {
  enum class Kind {
    kCpuTwice,      // one CPU exclusive to two tenants, in the ledger or the kernel
    kLost,          // an acknowledged tenant missing
    kDisagreement,  // ledger, kernel, libvirt and containerd differ (drift included)
    kLeak,          // a process, cgroup or ledger row nobody runs
  };
  Kind kind;
  std::string what;
};
std::string_view kindName(Violation::Kind kind);

// Waits (up to `settle`) for the node to agree; the violations left at the end, none when it does. Removals
// that failed are tried again meanwhile, as kubelet's sync loop keeps running while the node settles.
std::vector<Violation> checkNode(SoakNode& node, NodeTenants& tenants,
                                 std::chrono::seconds settle = std::chrono::seconds(30));

}  // namespace vri::soak
