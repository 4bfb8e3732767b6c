// Ledger: the single source of truth for the node's tenants and their CPUs
// and memory, for pods and VMs alike.
//
// The state is an immutable value (LedgerState) published through a
// shared_ptr: readers take it in O(1) and never wait on a decision. A decision
// is a pure function of the current state: it returns the next state and the
// delta between them, or a refusal that changed nothing. The caller holding
// the Writer commits the delta to the store, does whatever else the decision
// needs (vrid writes the cgroups), and publishes. Admits are idempotent: the
// same request for the same identity returns the same placement (a pod by
// UID, a container by pod UID and name, a VM by UUID).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "accounting/cpu_pool.h"
#include "accounting/ledger_records.h"
#include "accounting/ledger_state.h"
#include "accounting/ledger_store.h"
#include "accounting/topology_manager.h"
#include "accounting/vm_thread_move.h"
#include "base/thread_annotations.h"

namespace vri {

struct LedgerConfig {
  CpuPoolConfig pool;
  // Memory pods and VMs may take: capacity - system-reserved - kube-reserved - eviction-hard.
  uint64_t allocatableMemoryBytes = 0;
  uint64_t vmMemoryOverheadBytes = 0;  // added to every VM's memory
  // What a shared vCPU asks of the shared pool (1000: one CPU per vCPU, no overcommit).
  int64_t sharedVcpuMilli = 1000;
  // NUMA: how tenants are aligned (policy none still aligns NUMA-bound tenants, best effort),
  // whether Guaranteed containers with exclusive CPUs get their memory pinned too, and the
  // per-node reserved memory (adding up to reservedMemoryTotal).
  TopologyManagerOptions topologyManager;
  bool pinGuaranteedMemory = false;
  std::map<int, uint64_t> reservedMemoryPerNode;
  uint64_t reservedMemoryTotal = 0;
};

// decideAdmitContainer's `finished` when no container of the pod has finished.
inline const std::vector<std::string> kNoneFinished;

struct ContainerPlacement {
  CpuSet exclusive;  // empty: runs in the shared pool
  CpuSet cpus;       // cpuset.cpus now: the exclusive CPUs or the shared pool (with cpuset partitions, as
                     // NodeManager answers, the wide set the kernel narrows to the pool: node_tree.h)
  CpuSet mems;       // cpuset.mems of a NUMA-pinned container; empty: all nodes
  // The decision placed the container (first admit, or again after it handed
  // its CPUs on); false for a retry or a new runtime id for the same placement.
  bool placedNow = false;
};

// Which record a release means. Unset: the one named, which must exist. Set:
// only while the record's runtime id is `runtimeId`, or only while it has none
// (`onlyUnbound`: undoing an admit whose create failed); otherwise, or when the
// record is gone, the release is a no-op answered `false`.
struct ReleaseGuard {
  std::string runtimeId;
  bool onlyUnbound = false;
  bool set() const { return !runtimeId.empty() || onlyUnbound; }
  bool holdsFor(const std::string& boundId) const { return onlyUnbound ? boundId.empty() : boundId == runtimeId; }
};

class Ledger {
 public:
  // Loads what the store holds. Tenants whose placement no longer fits (CPUs
  // gone offline or now reserved, overlaps) are kept out and listed in
  // loadProblems(); a changed allocator policy is noted there, not refused.
  static Result<std::unique_ptr<Ledger>> open(std::shared_ptr<const Topology> topology, LedgerConfig config,
                                              std::unique_ptr<LedgerStore> store);

  // The state as last published: O(1), never waits on a decision.
  StatePtr state() const;

  // The right to decide: one decision at a time, from the current state to the
  // next. A scoped capability: clang checks that what the writer guards (the
  // store here, and what callers mark VRI_REQUIRES(ledger.writerMutex())) is
  // touched only while a Writer lives. Code handed a `Writer&` holds it too:
  // there is no Writer without the lock.
  class VRI_SCOPED_CAPABILITY Writer {
   public:
    explicit Writer(Ledger& ledger) VRI_ACQUIRE(ledger.writerMutex_) : ledger_(&ledger) { ledger.writerMutex_.lock(); }
    ~Writer() VRI_RELEASE() { ledger_->writerMutex_.unlock(); }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    // The state this writer decides from: the last one published.
    StatePtr current() const;
    // Writes the records `delta` touched as they are in `to`: the decision's
    // state, or its `before` state to undo it. One transaction.
    Result<void> commit(const LedgerDelta& delta, const LedgerState& to);
    void publish(StatePtr next);
    // Reads the store again and publishes what it holds (after an undo failed to commit).
    Result<void> reload();
    // Writes `change` (records and meta) in one transaction: a change of policy, or its undo.
    Result<void> commitChange(const LedgerChange& change);
    // From now on decisions follow `config`, starting from `state` (a ledger placed under it): one
    // step for readers, who see the new policy and its state together. The store is the caller's
    // (commitChange, with policyMeta's entry).
    void reconfigure(LedgerConfig config, StatePtr state);

   private:
    friend class Ledger;
    // What the writer's methods touch. Not analysed: the lock is this
    // object's own, held from its construction to its destruction.
    LedgerStore& store() const VRI_NO_THREAD_SAFETY_ANALYSIS { return *ledger_->store_; }
    Ledger* ledger_;
  };
  // State kept beside the ledger that only a holder of its Writer may touch (vrid's cgroup caches):
  // get() wants the Writer, so no code reaches it without the lock. What clang's analysis cannot see
  // across objects (the cache is another object's member), the type says.
  template <typename T>
  class WriterOwned {
   public:
    template <typename... Args>
    explicit WriterOwned(Args&&... args) : value_(std::forward<Args>(args)...) {}
    T& get(const Writer&) { return value_; }

   private:
    T value_;
  };
  // The writer mutex, for VRI_REQUIRES on what a caller guards with it.
  Mutex& writerMutex() VRI_RETURN_CAPABILITY(writerMutex_) { return writerMutex_; }

  // Decisions: the next state and the delta from `from`, or a refusal.
  // `finished`: containers of the pod that have exited for good (completed
  // init containers, or every container of a replaced sandbox). A container
  // placed now takes their exclusive CPUs first; what it leaves goes back to
  // the shared pool, and a finished container admitted again is placed anew.
  Result<Decision<ContainerPlacement>> decideAdmitContainer(const StatePtr& from, const PodSpec& pod,
                                                            const ContainerSpec& container,
                                                            const std::vector<std::string>& finished = {}) const;
  // Records the pod (answer: it is new) and, when `sandboxId` is set, binds it
  // as the pod's current sandbox, replacing an earlier one.
  Result<Decision<bool>> decideBindSandbox(const StatePtr& from, const PodSpec& pod,
                                           const std::string& sandboxId) const;
  // The topology manager's scope pod: a pod's containers together, their
  // exclusive CPUs and pinned memory aligned on the same NUMA nodes; all or nothing.
  Result<Decision<std::vector<ContainerPlacement>>> decideAdmitPod(const StatePtr& from, const PodSpec& pod,
                                                                   const std::vector<ContainerSpec>& containers) const;
  // Changes a container's resources in place when the pool allows it.
  Result<Decision<ContainerPlacement>> decideResizeContainer(const StatePtr& from, const std::string& podUid,
                                                             const ContainerSpec& container) const;
  // Answer: whether it was released (false only when `guard` did not hold).
  Result<Decision<bool>> decideReleaseContainer(const StatePtr& from, const std::string& podUid,
                                                const std::string& name, const ReleaseGuard& guard = {}) const;
  Result<Decision<bool>> decideReleasePod(const StatePtr& from, const std::string& podUid,
                                          const ReleaseGuard& guard = {}) const;

  Result<Decision<VmCpuPlacement>> decideAdmitVm(const StatePtr& from, const VmSpec& vm) const;
  // Define-time placement: reserves CPUs and NUMA memory for a VM that is
  // defined but not running; admitting the same spec later starts it on
  // exactly that placement. A reservation survives restarts and the start-up check.
  Result<Decision<VmCpuPlacement>> decideReserveVm(const StatePtr& from, const VmSpec& vm) const;
  // Changes a VM's CPU and memory request. A VM that fits in the CPUs it holds
  // keeps them; one that grows may have its vCPUs placed anew, on the NUMA
  // nodes it already uses where possible.
  Result<Decision<VmCpuPlacement>> decideResizeVm(const StatePtr& from, const VmSpec& vm) const;
  Result<Decision<bool>> decideReleaseVm(const StatePtr& from, const std::string& uuid) const;
  // Moves a running VM's threads (vrictl vcpupin, emulatorpin), every move or none:
  //  - a thread given a CPU holds it exclusively: a dedicated one moves there, a
  //    shared one becomes dedicated (the request turns mixed, or dedicated once
  //    every vCPU is; an emulator given a CPU is isolated);
  //  - a thread given the shared pool gives its CPU back;
  //  - a CPU another dedicated thread of the same VM holds is swapped with it;
  //  - refused: offline vCPUs, reserved CPUs, other tenants' CPUs (named), CPUs
  //    off the NUMA nodes of the VM's bound memory (memory does not move), VMs
  //    that hold whole cores or CPUs for offline vCPUs, VMs not running.
  Result<Decision<VmCpuPlacement>> decideMoveVm(const StatePtr& from, const std::string& uuid,
                                                const std::vector<VmThreadMove>& moves) const;
  // vCPUs brought online or taken offline in a running VM (`online`: the ids that
  // run now, ascending). One taken offline gives back what it held; one brought
  // online gets a CPU of its own when the request dedicates it (the user's pin, or
  // the first free CPU on the nodes of the VM's bound memory) and one is free, else
  // runs on the shared pool, counted there and said in `notes` (the request then
  // reads mixed). Refused when the shared pool cannot take the demand.
  Result<Decision<VcpusOnline>> decideVcpusOnline(const StatePtr& from, const std::string& uuid,
                                                  const std::vector<int>& online) const;
  // Where VMs' cgroups are (nullopt: gone). Unknown UUIDs are ignored.
  Decision<bool> decideVmScopes(const StatePtr& from,
                                const std::map<std::string, std::optional<CgroupPath>>& scopes) const;

  // Takes over a tenant found running, with the CPUs it holds now (refused
  // when they are reserved, offline or another tenant's). `memoryNodes`: the
  // NUMA nodes its cpuset.mems holds when narrower than the node's (kubelet's
  // memory manager bound it there); its memory is taken there and stays there.
  Result<Decision<bool>> decideAdoptContainer(const StatePtr& from, const PodSpec& pod, const ContainerSpec& container,
                                              const CpuSet& exclusive, const std::vector<int>& memoryNodes) const;
  Result<Decision<bool>> decideAdoptVm(const StatePtr& from, const VmSpec& vm, const VmCpuPlacement& placement) const;

  // CPUs a decision freed whose cgroup writes have not landed: held out of
  // every pool under `tenant`'s draining owner, and handed back once they land.
  Decision<bool> decideHoldDraining(const StatePtr& from, const std::string& tenant, const CpuSet& cpus) const;
  Decision<bool> decideReleaseDraining(const StatePtr& from) const;

  // Decide, commit and publish in one step, writing no cgroups: the start-up check, tests and
  // tools; vrid's decisions go through its own pipeline. `decide` is one of the decisions above,
  // given what follows the state:  ledger.apply(&Ledger::decideAdmitVm, vm).
  template <typename T, typename... Params>
  Result<T> apply(Result<Decision<T>> (Ledger::*decide)(const StatePtr&, Params...) const,
                  std::type_identity_t<Params>... args) {
    Writer writer(*this);
    Result<Decision<T>> decision = (this->*decide)(writer.current(), args...);
    if (!decision.ok()) return decision.error();
    if (decision->changes()) {
      VRI_TRY(writer.commit(decision->delta, *decision->after).context("commit"));
      writer.publish(decision->after);
    }
    return std::move(decision->answer);
  }

  // One record, copied out of the current state (tests and tools).
  std::optional<PodRecord> findPod(const std::string& uid) const;
  std::optional<VmRecord> findVm(const std::string& uuid) const;
  // The placement policy decisions follow now; a Writer changes it (Writer::reconfigure).
  std::shared_ptr<const LedgerConfig> config() const {
    MutexLock lock(stateMutex_);
    return config_;
  }
  const std::vector<std::string>& loadProblems() const { return loadProblems_; }
  const Topology& topology() const { return *topology_; }
  std::shared_ptr<const Topology> sharedTopology() const { return topology_; }
  // `loaded` (from the store, under `config`) with what only the running ledger `now` knows: where
  // VMs' cgroups are, and the totals that follow from it; numbered after `now`.
  static LedgerState withRuntimeKnowledge(const LedgerState& loaded, const LedgerState& now,
                                          const LedgerConfig& config);
  // The meta entry that says which allocator policy the stored placements were made under.
  static std::pair<std::string, std::string> policyMeta(const LedgerConfig& config);
  // The store's records for `delta`'s tenants as they are in `to`.
  static LedgerChange changeFor(const LedgerDelta& delta, const LedgerState& to);

 private:
  Ledger(std::shared_ptr<const Topology> topology, LedgerConfig config, std::unique_ptr<LedgerStore> store)
      : topology_(std::move(topology)),
        config_(std::make_shared<const LedgerConfig>(std::move(config))),
        store_(std::move(store)) {}

  // The policy, for decisions: they run under the Writer, and only a Writer changes it
  // (reconfigure, which also holds stateMutex_ for readers of config()).
  const LedgerConfig& policy() const VRI_NO_THREAD_SAFETY_ANALYSIS { return *config_; }

  // The state the store holds, with what no longer fits kept out (and said in `problems`).
  Result<StatePtr> loadState(const Writer& writer, std::vector<std::string>& problems) const;
  NextState next(const StatePtr& from) const {
    return NextState(from, policy().sharedVcpuMilli, policy().vmMemoryOverheadBytes);
  }
  uint64_t vmMemory(const VmSpec& vm) const { return vm.memoryBytes + policy().vmMemoryOverheadBytes; }
  Result<void> checkMemory(const LedgerState& state, uint64_t more, const std::string& who) const;
  Result<void> checkSharedDemand(const LedgerState& state, int64_t more, const std::string& who) const;
  Result<Decision<VmCpuPlacement>> decideVm(const StatePtr& from, const VmSpec& vm, bool defined) const;
  // A running VM's CPUs granted anew in `next` as `placement` holds them, the shared pool
  // kept for its tenants' demand changed by `moreSharedDemand` (a live move, a hot-plug).
  Result<void> regrantVm(NextState& next, const LedgerState& from, const std::string& uuid,
                         const VmCpuPlacement& placement, int64_t moreSharedDemand) const;
  // Every NUMA node the VM's memory is bound to is one of this host's.
  Result<void> checkVmNodesExist(const VmSpec& vm) const;
  // `podNodes`: the NUMA nodes the whole pod was aligned on (scope pod); null: align the container alone.
  Result<void> checkSameQos(const PodRecord& known, const PodSpec& pod) const;
  // A runtime id may name one sandbox or container only.
  Result<void> checkRuntimeIdFree(const LedgerState& state, const std::string& id, const RuntimeOwner& owner) const;
  // `handedOn`: CPUs finished containers left, taken first.
  Result<ContainerPlacement> placeContainer(NextState& next, PodRecord& pod, const ContainerSpec& container,
                                            const std::string& who, const std::vector<int>* podNodes,
                                            const CpuSet& handedOn) const;
  Result<ContainerPlacement> admitInto(NextState& next, const PodSpec& pod, const ContainerSpec& container,
                                       const std::vector<int>* podNodes,
                                       const std::vector<std::string>& finished = {}) const;
  // The NUMA nodes a NUMA-bound tenant's CPUs and memory come from.
  Result<std::vector<int>> alignNodes(const LedgerState& state, const AlignmentRequest& request,
                                      const std::vector<int>& strictNodes) const;

  std::shared_ptr<const Topology> topology_;
  std::shared_ptr<const LedgerConfig> config_ VRI_GUARDED_BY(stateMutex_);
  Mutex writerMutex_;  // one decision at a time: held by the Writer
  std::unique_ptr<LedgerStore> store_ VRI_GUARDED_BY(writerMutex_);
  std::vector<std::string> loadProblems_;
  mutable Mutex stateMutex_;  // the pointer alone, held for a pointer copy: readers never wait on a decision
  StatePtr current_ VRI_GUARDED_BY(stateMutex_);
};

// The ledger's invariants, checked by tests after every step: no CPU in two
// exclusive sets, no reserved CPU exclusive, shared = online - exclusive - held
// back, the shared pool non-empty and large enough for the shared tenants,
// memory within allocatable, no NUMA node over-committed in any resource,
// every tenant's memory blocks matching its cpuset.mems, and the totals equal
// to a recount.
Result<void> checkLedgerInvariants(const LedgerState& state, const Topology& topology, const LedgerConfig& config);

}  // namespace vri
