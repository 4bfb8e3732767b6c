// The decision pipeline behind every mutating call: decide in the ledger
// (committed before anything else happens), write the cgroups the decision
// changes — the shared pool shrinks before a new exclusive tenant starts —,
// publish an event and log one line with the tenant, the result and the time.
//
// An admit whose cgroup writes fail is undone (ledger and cgroups as before)
// and refused. Nothing here calls back into a client: the libvirt hook waits
// inside libvirtd for the reply.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "vri/cgroup_sync.h"
#include "vri/event_hub.h"
#include "vri/logger.h"

namespace vri {

// What the service reports about the node besides the ledger.
struct NodeFacts {
  NodeAllocatable allocatable;
  CgroupVersion cgroupVersion = CgroupVersion::kV1;
  std::map<std::string, std::string> options;  // the effective configuration
  bool ownsEverything = false;                 // VRI creates and writes the kubelet side too
};

struct ReconcileReport {
  std::vector<std::string> drift;
  std::vector<std::string> operations;
  std::vector<std::string> notes;
};

class NodeManager {
 public:
  NodeManager(Ledger& ledger, CgroupSync& sync, EventHub& events, Logger& log, NodeFacts facts)
      : ledger_(ledger), sync_(sync), events_(events), log_(log), facts_(std::move(facts)) {}

  const Ledger& ledger() const { return ledger_; }
  const CgroupSync& sync() const { return sync_; }
  const NodeFacts& facts() const { return facts_; }
  EventHub& events() { return events_; }

  Result<ContainerPlacement> admitContainer(const PodSpec& pod, const ContainerSpec& container);
  Result<std::vector<ContainerPlacement>> admitPod(const PodSpec& pod, const std::vector<ContainerSpec>& containers);
  Result<ContainerPlacement> resizeContainer(const std::string& podUid, const ContainerSpec& container);
  Result<void> releaseContainer(const std::string& podUid, const std::string& name);
  Result<void> releasePod(const std::string& podUid);

  Result<VmCpuPlacement> admitVm(const VmSpec& vm);
  Result<VmCpuPlacement> reserveVm(const VmSpec& vm);
  Result<VmCpuPlacement> resizeVm(const VmSpec& vm);
  // Finds the VM's cgroups through its QEMU pid and writes its placement.
  Result<std::pair<CgroupPath, int>> vmStarted(const std::string& uuid, int qemuPid);
  Result<void> releaseVm(const std::string& uuid);

  // Start-up: the ledger against a scan (release what is gone, adopt what
  // runs), then a full reconcile.
  Result<ReconcileReport> startUp();
  // Scan, report drift, write what differs.
  Result<ReconcileReport> reconcile(bool dryRun);

 private:
  // Runs `decide` and, when it succeeded, writes the cgroups if the shared
  // pool moved or `always` asks for it; `undo` (if any) reverts the decision
  // when the writes fail. Logs and publishes either way.
  template <typename T>
  Result<T> run(const std::string& action, const std::string& tenant, v1::Event::Kind kind,
                const std::function<Result<T>()>& decide, const std::function<std::string(const T&)>& describe,
                const std::function<void()>& undo, bool always);
  // Writes the ledger's state; returns how many cgroup operations it took.
  Result<int> writeCgroups();
  bool sharedPoolMoved() const;

  Ledger& ledger_;
  CgroupSync& sync_;
  EventHub& events_;
  Logger& log_;
  NodeFacts facts_;
  std::atomic<uint64_t> decisions_{0};  // decisions that asked for their cgroups to be written
  std::mutex writeMutex_;
  uint64_t appliedThrough_ = 0;  // every decision up to this one is on the cgroupfs
  mutable std::mutex appliedMutex_;
  CpuSet appliedShared_;  // the shared pool the cgroups were last written for
};

std::string podTenant(const std::string& uid);
std::string containerTenant(const std::string& uid, const std::string& name);
std::string vmTenant(const std::string& uuid);

}  // namespace vri
