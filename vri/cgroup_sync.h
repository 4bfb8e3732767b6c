// Keeps the cgroupfs in line with the ledger: finds each VM's cgroups
// through its QEMU pid, builds the tree the ledger implies, and applies it.
//
// One apply at a time, each from a snapshot taken once the previous apply
// finished, so a slow apply never writes an older pool over a newer one.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "cgroup-model/cgroup_applier.h"
#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/drift.h"
#include "cgroup-model/node_scan.h"
#include "cgroup-model/node_tree.h"

namespace vri {

// Picks the cgroup version and, on v1, the hierarchy of each controller from
// the mounts below `cgroupRoot` (read through `fs`), among `v1Controllers`.
Result<std::unique_ptr<CgroupBackend>> backendForHost(const CgroupFs& fs, const std::string& cgroupRoot,
                                                      std::optional<CgroupVersion> version,
                                                      const std::vector<std::string>& v1Controllers);

struct SyncResult {
  std::vector<Drift> drift;  // what differed before (full reconciles only)
  std::vector<CgroupOp> operations;
  CpuSet shared;  // the shared pool the writes were for
};

class CgroupSync {
 public:
  // `controllers`: v1, the controllers vrid manages; values of the others
  // (a host that keeps vrid out of the memory hierarchy) are left alone.
  CgroupSync(CgroupFs& fs, std::unique_ptr<CgroupBackend> backend, TreeLayout layout, NodeAllocatable allocatable,
             int64_t sharedVcpuMilli, std::vector<std::string> controllers)
      : fs_(fs),
        backend_(std::move(backend)),
        layout_(std::move(layout)),
        allocatable_(allocatable),
        sharedVcpuMilli_(sharedVcpuMilli),
        controllers_(std::move(controllers)) {}

  const CgroupBackend& backend() const { return *backend_; }
  const TreeLayout& layout() const { return layout_; }

  // Reads the node's cgroups and remembers where each running VM's are.
  Result<NodeScan> scan();
  // Finds a started VM's scope from /proc/<pid>/cgroup and remembers it.
  Result<CgroupPath> vmStarted(const std::string& uuid, int qemuPid);
  void forgetVm(const std::string& uuid);
  std::optional<CgroupPath> vmScope(const std::string& uuid) const;

  // Writes the ledger's current state. With `withDrift` the differences found
  // before writing are reported too; `dryRun` only plans.
  Result<SyncResult> apply(const Ledger& ledger, bool withDrift = false, bool dryRun = false);

 private:
  CgroupFs& fs_;
  std::unique_ptr<CgroupBackend> backend_;
  TreeLayout layout_;
  NodeAllocatable allocatable_;
  int64_t sharedVcpuMilli_;
  std::vector<std::string> controllers_;
  mutable std::mutex scopesMutex_;
  std::map<std::string, CgroupPath> vmScopes_;
  std::mutex applyMutex_;
};

}  // namespace vri
