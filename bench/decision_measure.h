// What bench/decision_scale measures on a running vrid core: serial exclusive grants and their
// releases, timed with what they asked of the kernel and of systemd.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "vri/node_manager.h"

namespace vri::bench {

// What each pair grants and takes back: one Guaranteed pod's exclusive CPU, or one dedicated
// VM's (admitted, not started: the shared pool gives up the CPU at admission, and the VM's own
// cgroups come with its start).
enum class Grant { kPod, kVm };

struct Row {
  std::string cgroupfs;
  std::string grant;  // "pod" | "vm"
  int tenants = 0;
  double decisionP50 = 0, decisionP99 = 0, writeP50 = 0, overheadP50 = 0, ratio = 0, writes = 0, rssMb = 0;
  double grantWrites = 0, releaseWrites = 0;  // `writes` (p50 of both) apart: admits, and releases
  double dbusP50 = 0, dbusCalls = 0;          // systemd mode: time in and number of SetUnitProperties calls
  // vrictl tree: the view alone (a snapshot), and compared with the kernel (a dry run's scan, which
  // holds the ledger's writer: the time a decision queued behind it waits).
  double treeMs = 0, treeCompareMs = 0;
};

// The bench's pod UIDs and VM UUIDs, numbered.
std::string uid(int n);
std::string vmUuid(int n);

// Makes (`made`) or removes a granted pod container's cgroup as its runtime would, outside the timed
// decision: without one, a grant has no container cgroup to write (nor, with cpuset partitions, to form).
using ContainerCgroupHook =
    std::function<vri::Result<void>(const std::string& podUid, const std::string& id, bool made)>;

// `pairs` grants and releases of `grant` on `node`, one after another: the row's figures.
vri::Result<Row> measure(const std::string& kind, Grant grant, int tenants, int pairs, vri::NodeManager& node,
                         TimingCgroupFs& fs, TimingUnits* systemd, const ContainerCgroupHook& containers = {});
// A pod row, then a VM row, on the same node.
vri::Result<std::vector<Row>> measureBoth(const std::string& kind, int tenants, int pairs, vri::NodeManager& node,
                                          TimingCgroupFs& fs, TimingUnits* systemd,
                                          const ContainerCgroupHook& containers = {});

}  // namespace vri::bench
