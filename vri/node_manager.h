// The decision pipeline behind every mutating call, one decision at a time
// under the ledger's writer lock, read top to bottom:
//   decide  — the ledger computes the next state and the delta, or refuses;
//   commit  — the delta's records go to the store in one transaction;
//   write   — the cgroups whose values the delta changed (cgroupfs only);
//   publish — readers see the new state; events and one log line follow;
//   answer.
// A failed write is handled by what the decision was:
//   - one that gives a tenant CPUs (admit, reserve, start) is undone: the
//     inverse delta is committed and written under the same lock, and the
//     caller is refused. If that commit fails too, vrid stops taking decisions,
//     reloads the ledger from the store and reconciles before taking more;
//   - one that frees CPUs (release, resize) stands: the freed CPUs are held
//     out of every pool, and the writes are retried (a full reconcile) until
//     they land, announced by WRITE_PENDING and WRITE_LANDED events.
// Nothing here calls libvirt: the hook waits inside libvirtd for the answer.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "accounting/capacity_books.h"
#include "accounting/config_change_plan.h"
#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "base/clock.h"
#include "base/thread_annotations.h"
#include "vri/cgroup_sync.h"
#include "vri/event_hub.h"
#include "vri/kubelet_checkpoint.h"
#include "vri/kubelet_memory_checkpoint.h"
#include "vri/logger.h"
#include "vri/vanished_tenants.h"
#include "vri/write_retry.h"

namespace vri {

// What the service reports about the node besides the ledger.
struct NodeFacts {
  NodeAllocatable allocatable;
  CgroupVersion cgroupVersion = CgroupVersion::kV1;
  std::map<std::string, std::string> options;              // the effective configuration
  bool ownsEverything = false;                             // VRI creates and writes the kubelet side too
  bool strictCpuReservation = false;                       // reserved CPUs are kept out of the shared pool
  KubeletDriver kubeletDriver = KubeletDriver::kCgroupfs;  // how kubelet names pods and containers
  // Placement policy options the configuration file sets otherwise than the ledger runs: option ->
  // the file's value, waiting for an apply.
  std::map<std::string, std::string> pendingPolicy;
};

// A new placement policy, as applyPolicy() takes it.
struct PolicyChange {
  LedgerConfig ledger;
  NodeAllocatable allocatable;
  bool strictCpuReservation = false;
  // The ledger's "applied_policy" meta entry under the new policy, and as it is now (for an undo).
  std::string appliedText, previousText;
  // How fast a container's bound memory moves to its new NUMA nodes; 0: such a change is refused.
  uint64_t memoryMoveBytesPerSecond = 0;
};

struct ReconcileReport {
  std::vector<std::string> drift;
  std::vector<std::string> operations;
  std::vector<std::string> notes;
};

// What a decision's cgroup writes cost: how many, and how long they took.
// What handBack() is asked: where kubelet keeps its checkpoints, the configuration it will start
// with (empty: none known, the CPU manager's checkpoint alone), and, to commit, what the caller wrote.
struct KubeletHandBackRequest {
  // Each initialised, so that a designated list may leave any out.
  std::string kubeletRootDir = {};
  std::string kubeletConfig = {};
  bool dryRun = true;
  std::string writtenCpu = {};     // what the caller wrote to cpu_manager_state
  std::string writtenMemory = {};  // ... and to memory_manager_state, when there is one to write
};

// What handBack() composed and wrote.
struct KubeletHandBack {
  std::string checkpointPath;
  CpuManagerCheckpoint checkpoint;
  std::string checkpointText;  // the file's text
  // With the configuration's memoryManagerPolicy Static: the memory manager's; paths empty otherwise.
  std::string memoryCheckpointPath;
  MemoryManagerCheckpoint memoryCheckpoint;
  std::string memoryCheckpointText;
  int cgroupWrites = 0;
};

struct WriteStats {
  int writes = 0;
  std::chrono::microseconds took{0};
};

struct NodeManagerOptions {
  // How soon writes that failed are tried again.
  std::chrono::milliseconds retryInterval = std::chrono::seconds(1);
  // How long a tenant's cgroups (a VM's QEMU process) must be gone before reconcile releases it.
  std::chrono::seconds releaseGrace = std::chrono::minutes(5);
  // The clock retries wait by and grace periods are measured with; tests bring their own. Not owned.
  const Clock* clock = &steadyClock();
  // The kernel's page migration and the pause that holds a memory move's rate (applyPolicy); tests
  // bring their own. Null: the kernel's move_pages(2), and a sleep.
  PageMigration* pageMigration = nullptr;
  SleepUntil sleepUntil = nullptr;
};

class NodeManager {
 public:
  NodeManager(Ledger& ledger, CgroupSync& sync, EventHub& events, Logger& log, NodeFacts facts,
              NodeManagerOptions options = {});
  ~NodeManager();

  // What readers need, without reaching through: the ledger's state (O(1)), the
  // node, where its cgroups are, and the events.
  StatePtr state() const { return ledger_.state(); }
  const Topology& topology() const { return ledger_.topology(); }
  std::shared_ptr<const Topology> sharedTopology() const { return ledger_.sharedTopology(); }
  // A copy: the options change on SIGHUP.
  NodeFacts facts() const {
    MutexLock lock(factsMutex_);
    return facts_;
  }
  // The effective configuration after a reload (what GetNode shows).
  void setOptions(std::map<std::string, std::string> options) {
    MutexLock lock(factsMutex_);
    facts_.options = std::move(options);
  }
  const TreeLayout& layout() const { return sync_.layout(); }
  // What every VM's memory is admitted with besides its own.
  uint64_t vmMemoryOverheadBytes() const { return ledger_.config()->vmMemoryOverheadBytes; }
  // A VM's memory as admitted: its own and the configured overhead.
  uint64_t vmMemoryBytes(const VmRecord& vm) const { return vm.spec.memoryBytes + vmMemoryOverheadBytes(); }
  std::shared_ptr<EventSubscription> subscribe(size_t recent = 0) { return events_.subscribe(recent); }
  // An event of vrid's libvirt side, which decides nothing (PINS_PENDING, PINS_SET).
  void announce(EventKind kind, const std::string& tenant, const std::string& detail) {
    events_.publish(kind, tenant, detail);
  }
  std::vector<Event> recentEvents(size_t recent) const { return events_.recent(recent); }

  // `finished`: see Ledger::decideAdmitContainer. `stats`: the decision's cgroup writes.
  Result<ContainerPlacement> admitContainer(const PodSpec& pod, const ContainerSpec& container,
                                            const std::vector<std::string>& finished = {}, WriteStats* stats = nullptr);
  // A container found running on `running` CPUs, in one decision: one the
  // ledger knows is admitted as any other (its id bound, nothing moved); one it
  // does not is taken over on the CPUs it holds (exclusive when fewer than the
  // shared pool, else shared), is_new in its placement.
  Result<ContainerPlacement> adoptOrAdmitContainer(const PodSpec& pod, const ContainerSpec& container,
                                                   const CpuSet& running);
  // Records the pod (true: it is new) and binds its sandbox's runtime id when given.
  Result<bool> bindSandbox(const PodSpec& pod, const std::string& sandboxId);
  Result<std::vector<ContainerPlacement>> admitPod(const PodSpec& pod, const std::vector<ContainerSpec>& containers);
  Result<ContainerPlacement> resizeContainer(const std::string& podUid, const ContainerSpec& container);
  // True when released; false when `guard` did not hold (logged, no event).
  Result<bool> releaseContainer(const std::string& podUid, const std::string& name, const ReleaseGuard& guard = {});
  Result<bool> releasePod(const std::string& podUid, const ReleaseGuard& guard = {});

  Result<VmCpuPlacement> admitVm(const VmSpec& vm);
  Result<VmCpuPlacement> reserveVm(const VmSpec& vm);
  Result<VmCpuPlacement> resizeVm(const VmSpec& vm);
  // A container the runtime has made the cgroup of (`id`: its runtime id, or its pod's sandbox's):
  // the pod's cgroups written as the ledger holds them, the container's with them (it had none
  // when it was admitted). Nothing is decided; a write that fails is the caller's to report, and
  // reconcile's to repair.
  Result<void> containerStarted(const std::string& podUid, const std::string& id, WriteStats* stats = nullptr);
  // Finds the VM's cgroups through its QEMU pid and writes its placement.
  Result<std::pair<CgroupPath, int>> vmStarted(const std::string& uuid, int qemuPid);
  Result<void> releaseVm(const std::string& uuid);
  // A running VM's vCPUs or emulator moved (Ledger::decideMoveVm); its cgroups
  // written. libvirt's live pins are the caller's to set afterwards.
  Result<VmCpuPlacement> moveVm(const std::string& uuid, const std::vector<VmThreadMove>& moves);
  // vCPUs brought online or offline in a running VM (Ledger::decideVcpusOnline); its cgroups written.
  Result<VcpusOnline> vcpusOnline(const std::string& uuid, const std::vector<int>& online);

  // The node handed back to kubelet's static CPU manager (node_manager_handback.cc): kubelet's
  // checkpoints under `kubeletRootDir` composed from the ledger (vri/kubelet_handback_checkpoints.h),
  // checked against the configuration kubelet will start with; unless `dryRun`, once the caller has
  // written them there, kubelet's QoS and pod cgroups given every CPU, and from then on every
  // decision refused and no reconcile written. Refused while a VM holds exclusive CPUs, writes
  // wait to land, the files hold another static checkpoint, or kubelet's configuration would
  // not start on them.
  Result<KubeletHandBack> handBack(const KubeletHandBackRequest& request);
  bool handedBack() const { return handedBack_.load(); }

  // A new placement policy, as one transaction (node_manager_policy.cc): planned against the ledger
  // (planConfigChange); refused, changing nothing, when a tenant would break it or would have bound
  // memory moved that cannot move (a VM's, hugepage-backed; each named), or writes wait to land;
  // else the records of every tenant placed under it and its meta committed together, each moving
  // container's memory moved at the change's rate (decisions wait meanwhile), the whole cgroup tree
  // written for it, and the policy and state published as one. When a write fails, the memory moves
  // back at the same rate, the old records, meta and cgroups are put back and the caller refused. The
  // VMs it moved still need libvirt told (their live pins): the caller's, as for moveVm.
  Result<ConfigChangePlan> applyPolicy(const PolicyChange& change);
  // What the configuration file says that the ledger does not run yet (GetNode, metrics).
  void setPendingPolicy(std::map<std::string, std::string> pending) {
    MutexLock lock(factsMutex_);
    facts_.pendingPolicy = std::move(pending);
  }

  // Start-up: the ledger against a scan (release what is gone, adopt what
  // runs), then a full reconcile.
  Result<ReconcileReport> startUp();
  // Scan, report drift, write what differs; also lands pending writes and
  // releases tenants gone for longer than the release grace.
  Result<ReconcileReport> reconcile(bool dryRun);

  // Views: the books as a walk over the tenants of the current state, and the cgroup tree;
  // `compareKernel` reads the cgroupfs as a dry-run reconcile does, holding the ledger's writer so
  // that no decision writes meanwhile.
  CapacityBooks capacity() const;
  Result<TreeView> tree(bool compareKernel);

  // Whether writes that failed are still waiting to land.
  bool writesPending() const { return retry_.writesPending(); }
  // Whether decisions are refused (an undo could not be committed and the reload failed).
  bool halted() const { return retry_.halted(); }
  // Whether exclusive pod containers are cpuset partitions (TreeLayout::cpusetPartitions).
  bool cpusetPartitions() const { return sync_.layout().cpusetPartitions; }
  // What libvirt is told for a VM's shared threads (CgroupSync::wideSharedCpus).
  CpuSet wideSharedCpus(const LedgerState& state) const { return sync_.wideSharedCpus(state); }
  // Reconciles finished so far (periodic, asked for, retries), whatever their outcome.
  uint64_t reconciles() const { return reconciles_.load(); }
  // Those that wrote (not dry runs), by outcome, and the differences they found: the metrics' counters.
  struct ReconcileOutcomes {
    uint64_t clean = 0, repaired = 0, failed = 0, differences = 0;
  };
  ReconcileOutcomes reconcileOutcomes() const {
    return {reconcileOutcomes_.clean.load(), reconcileOutcomes_.repaired.load(), reconcileOutcomes_.failed.load(),
            reconcileOutcomes_.differences.load()};
  }

 private:
  // What a failed cgroup write means for a decision.
  enum class OnWriteFailure {
    // It gives a tenant CPUs: undone (the inverse delta committed and written), the caller refused.
    kUndo,
    // It frees CPUs: it stands, the freed CPUs held out of every pool until a retry lands the writes.
    kHoldFreedCpus,
  };
  // When a decision is committed, relative to its cgroup writes. A kill between the two must leave
  // what the start-up reads as the decision wholly taken or wholly not: an admit or resize is
  // committed first (its cgroups missing or stale are then made or written by the start-up's
  // reconcile, or, with all of a pod's cgroups missing, released as never made); a release is
  // committed after its writes (its cgroups gone while the ledger still holds it read as released;
  // committed first, its cgroups would be left with no tenant, and adopted as a new one).
  enum class CommitPoint { kBeforeWrites, kAfterWrites };
  // A kind of decision: the verb of its log line, its event, and how it is carried out.
  struct DecisionRule {
    const char* action;
    EventKind event;
    OnWriteFailure onFailure;
    CommitPoint commitPoint;
    // A refusal is logged as a warning, not as a caller's refused request (a VM that runs unplaced).
    bool refusalIsWarning;
  };
  static constexpr DecisionRule kAdmit{"admit", EventKind::kAdmitted, OnWriteFailure::kUndo, CommitPoint::kBeforeWrites,
                                       false};
  static constexpr DecisionRule kAdopt{"adopt", EventKind::kAdopted, OnWriteFailure::kUndo, CommitPoint::kBeforeWrites,
                                       false};
  static constexpr DecisionRule kReserve{"reserve", EventKind::kReserved, OnWriteFailure::kUndo,
                                         CommitPoint::kBeforeWrites, false};
  static constexpr DecisionRule kStart{"started", EventKind::kStarted, OnWriteFailure::kUndo,
                                       CommitPoint::kBeforeWrites, true};
  static constexpr DecisionRule kMove{"move", EventKind::kMoved, OnWriteFailure::kUndo, CommitPoint::kBeforeWrites,
                                      false};
  static constexpr DecisionRule kVcpus{"vcpus", EventKind::kResized, OnWriteFailure::kUndo, CommitPoint::kBeforeWrites,
                                       false};
  static constexpr DecisionRule kResize{"resize", EventKind::kResized, OnWriteFailure::kHoldFreedCpus,
                                        CommitPoint::kBeforeWrites, false};
  static constexpr DecisionRule kRelease{"release", EventKind::kReleased, OnWriteFailure::kHoldFreedCpus,
                                         CommitPoint::kAfterWrites, false};

  // Every decision's way from request to answer (node_manager.cc): refused while halted; decided
  // by `decide(from)` under the writer; carried out as `rule` says; its answer turned by
  // `reply(writer, answer)` into what the caller is told (a Result where that can fail); said in
  // one log line and one event, `describe(reply)` their detail, unless `quiet(reply)` holds (the
  // caller then says it).
  template <typename Decide, typename Reply, typename Describe, typename Quiet>
  auto decision(const DecisionRule& rule, const std::string& tenant, Decide decide, Reply reply, Describe describe,
                Quiet quiet, WriteStats* stats = nullptr);
  // Commit, write and publish a decision taken under `writer`; the
  // decision's own cgroup-write count goes to `stats`.
  template <typename T>
  Result<void> carryOut(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                        const DecisionRule& rule, WriteStats* stats = nullptr) VRI_REQUIRES(ledger_.writerMutex());
  // Writes back what a decision that did not stand had written; when that fails too, the retry
  // thread's reconcile brings the cgroups to the ledger. `after` names what went wrong, for the log.
  template <typename T>
  void restoreCgroups(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant, const char* after)
      VRI_REQUIRES(ledger_.writerMutex());
  // Undo of a decision whose writes failed: the inverse delta, committed and written.
  template <typename T>
  Error undo(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant, const Error& cause)
      VRI_REQUIRES(ledger_.writerMutex());
  void published(const LedgerState& before, const LedgerState& after);
  // A placement as the runtime is told it: a shared container's cpuset.cpus as VRI writes it in `now`
  // (with cpuset partitions, the wide set less its pod's partitions; CgroupSync::runtimeSharedCpus).
  ContainerPlacement asWritten(const StatePtr& now, const std::string& podUid, ContainerPlacement placed) const;
  Result<void> checkNotHalted() const;
  // The one log line and the event of a decision.
  template <typename T>
  Result<T> finish(const DecisionRule& rule, const std::string& tenant, Result<T> result, const std::string& detail,
                   std::chrono::steady_clock::time_point start);
  Result<ReconcileReport> reconcileLocked(Ledger::Writer& writer, bool dryRun) VRI_REQUIRES(ledger_.writerMutex());
  // Releases what has been gone from the node for the grace period.
  Result<void> releaseVanished(Ledger::Writer& writer, const VanishedTenants::Due& due)
      VRI_REQUIRES(ledger_.writerMutex());
  // The retry thread's one attempt: reload a halted ledger, or land pending writes.
  void retryOnce();

  Ledger& ledger_;
  CgroupSync& sync_;
  EventHub& events_;
  Logger& log_;
  mutable Mutex factsMutex_;
  NodeFacts facts_ VRI_GUARDED_BY(factsMutex_);
  NodeManagerOptions options_;
  // What applyPolicy moves memory with: the options' or the kernel's, and their pause or a sleep.
  std::unique_ptr<PageMigration> ownPageMigration_;
  PageMigration* pageMigration_;
  SleepUntil sleepUntil_;
  // Each container's memory in `moving` moved to its new nodes (`forward`) or back to its old ones,
  // at `bytesPerSecond`; the bytes moved.
  Result<uint64_t> moveBoundMemory(const Ledger::Writer& writer, const LedgerState& state,
                                   const std::vector<const TenantChange*>& moving, bool forward,
                                   uint64_t bytesPerSecond) VRI_REQUIRES(ledger_.writerMutex());
  VanishedTenants vanished_ VRI_GUARDED_BY(ledger_.writerMutex());
  // The differences VRI verifies and does not repair (pods' hugetlb limits) that the last reconcile
  // reported: a warning is logged when they change, not every interval.
  std::vector<std::string> unrepaired_ VRI_GUARDED_BY(ledger_.writerMutex());
  std::atomic<uint64_t> reconciles_{0};
  // Set once by handBack(), under the writer: the node is kubelet's again.
  std::atomic<bool> handedBack_{false};
  struct {
    std::atomic<uint64_t> clean{0}, repaired{0}, failed{0}, differences{0};
  } reconcileOutcomes_;
  WriteRetry retry_;  // last: its thread calls retryOnce
};

}  // namespace vri
