// Keeps the cgroupfs in line with the ledger, two ways:
//  - write(): after a decision, only the cgroups whose values it changed,
//    from the two states and the delta, without reading the tree: the
//    node-level cgroups (kubepods, QoS, the machine partition: cpusets and the
//    pod/VM balance), the touched tenants' own cgroups, and — when the shared
//    pool moved — the cpusets of every tenant that runs in it;
//  - reconcile(): the whole tree read and compared (drift, start-up, retries).
// Both take the ledger's Writer: the caches below are the writer's (Ledger::WriterOwned), like the
// ledger's store, and no two decisions touch them at once.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "cgroup-model/cgroup_applier.h"
#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/cpuset_delta.h"
#include "cgroup-model/drift.h"
#include "cgroup-model/node_scan.h"
#include "cgroup-model/node_tree.h"
#include "cgroup-model/numa_page_mover.h"
#include "systemd/systemd_cgroupfs.h"
#include "vri/ledger_tree.h"

namespace vri {

// Picks the cgroup version and, on v1, the hierarchy of each controller from
// the mounts below `cgroupRoot` (read through `fs`), among `v1Controllers`.
Result<std::unique_ptr<CgroupBackend>> backendForHost(const CgroupFs& fs, const std::string& cgroupRoot,
                                                      std::optional<CgroupVersion> version,
                                                      const std::vector<std::string>& v1Controllers);

// The tree reconcile holds the cgroupfs to, for display: each cgroup's files as
// VRI writes them, whose tenant it is, and (when compared) where the kernel differs.
struct TreeView {
  DesiredTree desired;
  std::map<CgroupPath, std::string> tenants;  // "pod/<uid>", "pod/<uid>/<name>", "vm/<uuid>"
  std::map<CgroupPath, std::vector<ControlFile>> files;
  bool compared = false;
  std::vector<Drift> drift;
};

struct SyncResult {
  std::vector<Drift> drift;  // what differed before (full reconciles only)
  std::vector<CgroupOp> operations;
};

class CgroupSync {
 public:
  // `controllers`: v1, the controllers vrid manages; values of the others
  // (a host that keeps vrid out of the memory hierarchy) are left alone.
  // `systemd`: under systemd, `fs` itself (a SystemdCgroupFs); the first full reconcile then
  // sets every kept unit's values through systemd, whether its files differ or not.
  CgroupSync(CgroupFs& fs, std::unique_ptr<CgroupBackend> backend, TreeLayout layout, NodeAllocatable allocatable,
             std::shared_ptr<const Topology> topology, int64_t sharedVcpuMilli, std::vector<std::string> controllers,
             SystemdCgroupFs* systemd = nullptr);

  const CgroupBackend& backend() const { return *backend_; }
  // A change of the placement policy: what kubepods may hold, and what a shared vCPU asks. The
  // caller writes the tree under it (reconcile) and, should that fail, sets the old values back.
  void setPolicy(const Ledger::Writer&, const NodeAllocatable& allocatable, int64_t sharedVcpuMilli) {
    MutexLock lock(policyMutex_);
    allocatable_ = allocatable;
    sharedVcpuMilli_ = sharedVcpuMilli;
  }
  const TreeLayout& layout() const { return layout_; }

  // The cpuset of the shared cgroups, pods' and VMs', for `state`: the shared pool, or with cpuset
  // partitions the wide set (node_tree.h, wideSharedCpus). What libvirt is told for a VM's shared
  // threads, and a shared container's runtime less its own pod's partitions.
  CpuSet wideSharedCpus(const LedgerState& state) const;
  // That for a shared container of `pod`.
  CpuSet runtimeSharedCpus(const LedgerState& state, const PodRecord& pod) const;

  // How many units' values the last full reconcile gave systemd (0 after the first).
  int lastUnitsKept() const { return lastUnitsKept_.load(); }

  // Reads the node's cgroups (pods, containers, VM scopes).
  Result<NodeScan> scan() const;
  // A started VM's scope, from /proc/<pid>/cgroup.
  Result<CgroupPath> findVmScope(int qemuPid) const;

  // The cgroups `delta` changed between `before` and `after`, in a safe order.
  // Returns the number of writes (and directories made or removed).
  Result<int> write(const Ledger::Writer& writer, const StatePtr& before, const StatePtr& after,
                    const LedgerDelta& delta);
  // The machine partition's own values for `state`, where they differ: libvirt makes it (without
  // systemd) when the first VM starts, with the root's values, after vrid's decisions wrote the node.
  Result<int> writeMachinePartition(const Ledger::Writer& writer, const LedgerState& state);
  // The whole tree for `state`. With `withDrift` the differences found
  // before writing are reported too; `dryRun` only plans.
  Result<SyncResult> reconcile(const Ledger::Writer& writer, const LedgerState& state, bool withDrift = false,
                               bool dryRun = false);
  // kubelet's static CPU manager takes the node back: kubepods, its QoS cgroups and every pod's cgroup
  // get `cpus` (kubelet never narrows them: its static policy sets containers' cpusets only, and a
  // container's cpuset may not be wider than its parents'), containers on the shared pool get the
  // pool (kubelet's default set, which cpuset partitions' wide set is not), every other value stays
  // as the ledger holds it. Returns the writes.
  Result<int> handBackToKubelet(const Ledger::Writer& writer, const LedgerState& state, const CpuSet& cpus);
  // Where a container's cpuset files are, its pod's first: what a memory move widens. Not found when
  // the container has no cgroup (no runtime id yet, or a pod outside kubelet's tree).
  Result<std::vector<CgroupDir>> containerCpusetDirs(const PodRecord& pod, const std::string& name) const;
  // A container's memory moved to the NUMA nodes `to` at `mover`'s rate: its pod's and its own
  // cpuset.mems widened by `to` first (the pages may live on both while they move), then every page of
  // its processes moved (numa_page_mover.h). The mems are narrowed by the reconcile that follows.
  // Returns the bytes moved; 0 when the container has no cgroup.
  struct MemoryMover {
    PageMigration& kernel;
    uint64_t bytesPerSecond;
    const Clock& clock;
    const SleepUntil& sleepUntil;
  };
  Result<uint64_t> moveContainerMemory(const Ledger::Writer& writer, const PodRecord& pod, const std::string& name,
                                       const CpuSet& to, const MemoryMover& mover);
  // The tree reconcile would hold `state` to; `compare` also reads the kernel's files
  // (callers hold the ledger's writer then, so that no decision writes meanwhile).
  Result<TreeView> view(const LedgerState& state, bool compare) const;

 private:
  struct Caches;  // below: what one write or reconcile keeps for the next
  // Paths and values one write() points its changes at.
  struct Scratch {
    std::deque<CgroupDir> dirs;
    std::deque<CpuSet> values;
  };
  LedgerTreeInputs inputs() const {
    MutexLock lock(policyMutex_);
    return {*topology_, layout_, allocatable_, sharedVcpuMilli_};
  }
  int64_t sharedVcpuMilli() const {
    MutexLock lock(policyMutex_);
    return sharedVcpuMilli_;
  }

 public:
  NodeAllocatable allocatable() const {
    MutexLock lock(policyMutex_);
    return allocatable_;
  }

 private:
  void dropUnmanaged(DesiredTree& tree) const;
  // Reconcile's tree for `state`: without the values of controllers vrid leaves alone, and without
  // the exited containers' cgroups.
  Result<DesiredTree> reconciledTree(const LedgerState& state) const;
  // False for a systemd unit whose parent stands in for its cpuset (unit_ownership.h).
  bool keepsOwnCpuset(const CgroupPath& path) const;
  // A shim-run pod's container (or sandbox) whose cgroup is gone has exited: the runtime removed its
  // cgroup, and it waits for kubelet's RemoveContainer. Reconcile neither recreates it nor calls it drift.
  void dropExitedContainers(const LedgerState& state, DesiredTree& tree) const;
  // A node without libvirt or kubelet yet: their root (the machine partition, kubepods) is theirs to make,
  // and while no tenant of the ledger lives below it, its absence is no drift and nothing to repair.
  void dropRootsNotYetMade(const LedgerState& state, DesiredTree& tree) const;
  // The node-level cgroups' values for `state`: the previous write's `after`, usually this write's `before`,
  // shared rather than computed or copied again.
  std::shared_ptr<const DesiredTree> nodeCgroups(const Caches& caches, const LedgerState& state) const;
  // Node-level cgroups and, when the shared pool moved, every untouched tenant in it.
  Result<void> planNodeAndFollowers(Caches& caches, const StatePtr& before, const StatePtr& after,
                                    const LedgerDelta& delta, Scratch& scratch, std::vector<CpusetChange>& cpusets,
                                    std::vector<PlainWrite>& plain);
  // The writes that take one node-level cgroup from `before` (null: new) to `after`, whose values differ.
  Result<void> addSpecChanges(const CgroupPath& path, const CgroupSpec* before, const CgroupSpec& after,
                              Scratch& scratch, std::vector<CpusetChange>& cpusets,
                              std::vector<PlainWrite>& plain) const;
  // A tenant's cgroups that follow the shared pool, kept while its record
  // (and, for a VM, its scope) is the same object from one state to the next.
  struct FollowerCgroup {
    CgroupDir dir;
    bool leaf = false;
    bool withOwn = false;  // holds the tenant's exclusive CPUs besides the shared pool
  };
  struct Followers {
    std::shared_ptr<const void> record, scope;
    CpuSet own;
    CpuSet withBefore, withAfter;        // own | the pool, before and after this write
    CpuSet withoutBefore, withoutAfter;  // the pool - own (a pod's partitions in the wide pool)
    std::vector<FollowerCgroup> cgroups;
  };
  Followers& podFollowers(Caches& caches, const std::string& uid, const PodRecord& pod, const LedgerState& state);
  Followers& vmFollowers(Caches& caches, const std::string& uuid, const VmRecord& vm, const CgroupPath& scope,
                         const LedgerState& state);
  // Cpuset partitions: the partitions of touched pods that go or change return to `member`, and
  // their pods give back the exclusive CPUs, before kubepods' exclusive CPUs shrink.
  Result<int> dissolvePartitions(const LedgerState& before, const LedgerState& after, const LedgerDelta& delta);
  // A touched tenant's own cgroups, made, written or removed as `after` says.
  Result<int> writeTenant(const std::string& what, DesiredTree tree);

  CgroupFs& fs_;
  std::unique_ptr<CgroupBackend> backend_;
  TreeLayout layout_;
  // What the placement policy sets: a policy change (setPolicy) replaces them while views read them.
  mutable Mutex policyMutex_;
  NodeAllocatable allocatable_ VRI_GUARDED_BY(policyMutex_);
  std::shared_ptr<const Topology> topology_;
  int64_t sharedVcpuMilli_ VRI_GUARDED_BY(policyMutex_);
  std::vector<std::string> controllers_;
  std::unique_ptr<KubeletNamer> kubeletNamer_;
  LibvirtNamer libvirtNamer_;
  std::string cpusetHierarchy_;  // where cpuset files live ("cpuset" on v1, "" on v2)
  SystemdCgroupFs* systemd_ = nullptr;
  // What one write or reconcile keeps for the next: the Writer's alone (Ledger::WriterOwned).
  struct Caches {
    explicit Caches(CpusetDeltaWriter writer) : cpusetWriter(std::move(writer)) {}
    CpusetDeltaWriter cpusetWriter;
    std::unordered_map<std::string, Followers> podFollowers, vmFollowers;  // by UID, by UUID
    // The node-level values of the last write's `after` (with the state itself, so that its address cannot be
    // reused while it is remembered).
    std::pair<StatePtr, std::shared_ptr<const DesiredTree>> lastNode;
    bool unitsKept = false;  // every kept unit's values were given to systemd once
  };
  Ledger::WriterOwned<Caches> caches_;
  std::atomic<int> lastUnitsKept_{0};  // read by anyone (a report), written by reconcile
};

}  // namespace vri
