// VanishedTenants: which tenants have been gone from the node — their cgroups,
// or a VM's QEMU process — for longer than a grace period, so that reconcile
// releases them. A tenant seen again is forgotten; a VM that is only reserved
// (defined, not running) is never due; a container whose runtime id is not
// known yet has no cgroup of its own and is judged by its pod's; the
// containers of a pod with a bound sandbox are released by the runtime's
// removals only (the CRI shim), never for a missing cgroup.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "accounting/ledger_state.h"
#include "base/clock.h"
#include "cgroup-model/node_scan.h"

namespace vri {

class VanishedTenants {
 public:
  explicit VanishedTenants(Clock::Duration grace) : grace_(grace) {}

  struct Due {
    std::vector<std::string> pods;                                // by UID
    std::vector<std::pair<std::string, std::string>> containers;  // pod UID, container name
    std::vector<std::string> vms;                                 // by UUID
    bool empty() const { return pods.empty() && containers.empty() && vms.empty(); }
  };
  // Notes what `scan` lacks of `state` at `now`, and returns what has been missing for the grace period.
  Due update(const LedgerState& state, const NodeScan& scan, Clock::TimePoint now);
  Clock::Duration grace() const { return grace_; }

 private:
  // True when `tenant`, missing now, has been missing for the grace period.
  bool missing(const std::string& tenant, Clock::TimePoint now, std::map<std::string, Clock::TimePoint>& seen);

  Clock::Duration grace_;
  std::map<std::string, Clock::TimePoint> missingSince_;  // by tenant name
};

}  // namespace vri
