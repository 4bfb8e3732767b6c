// LedgerState: the ledger as an immutable value, and what a decision makes of it.
//
// Readers hold a StatePtr (a shared, const state) and never see it change. A
// decision copies the books that are bounded by the machine (the CPU pool's
// grants and the NUMA cells: at most one entry per CPU or NUMA owner) and
// shares every tenant record it does not touch (PersistentMap), so its cost is
// what it changes, not the size of the node.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "accounting/cpu_pool.h"
#include "accounting/ledger_records.h"
#include "accounting/numa_memory.h"
#include "accounting/persistent_map.h"
#include "accounting/tenant_id.h"
#include "cgroup-model/cgroup_path.h"

namespace vri {

// Sums over every tenant, kept per decision from what each touched tenant
// contributed before and after; checkLedgerInvariants recounts them.
struct LedgerTotals {
  int64_t sharedDemandMilli = 0;  // what shared tenants request of the shared pool
  int sharedTenants = 0;
  uint64_t admittedMemoryBytes = 0;
  int64_t podRequestMilli = 0;        // every pod's container requests and overhead
  int64_t burstableRequestMilli = 0;  // the same for Burstable pods (their QoS cgroup's shares)
  int64_t startedVmRequestMilli = 0;  // VMs with cgroups: shared vCPUs and exclusive CPUs (the partition's shares)

  LedgerTotals& operator+=(const LedgerTotals& other);
  LedgerTotals& operator-=(const LedgerTotals& other);
  friend bool operator==(const LedgerTotals&, const LedgerTotals&) = default;
};

// Who holds a runtime id: a pod's sandbox (container empty) or one of its containers.
struct RuntimeOwner {
  std::string podUid;
  std::string container;
  bool isSandbox() const { return container.empty(); }
  bool operator==(const RuntimeOwner&) const = default;
};

struct LedgerState {
  uint64_t sequence = 0;                       // decisions published since the ledger was opened
  CpuPool pool;                                // reserved, shared and exclusive CPUs
  NumaMemory numa;                             // memory per NUMA node and the NUMA-bound tenants' blocks
  PersistentMap<std::string, PodRecord> pods;  // by UID
  PersistentMap<std::string, VmRecord> vms;    // by UUID
  // Where each started VM's cgroups are, found through its QEMU pid. Runtime
  // knowledge: never stored, found again by the start-up scan.
  PersistentMap<std::string, CgroupPath> vmScopes;
  // Every bound runtime id (sandboxes and containers), kept with the pods: a
  // release or resize by id costs a lookup, not a walk over the node.
  PersistentMap<std::string, RuntimeOwner> runtimeIds;
  LedgerTotals totals;

  const CpuSet& reserved() const { return pool.reserved(); }
  CpuSet shared() const { return pool.shared(); }
  const std::map<std::string, ExclusiveGrant>& grants() const { return pool.grants(); }
  // CPUs freed by a decision whose cgroup writes have not landed: out of every pool.
  CpuSet draining() const;
  const PodRecord* pod(const std::string& uid) const { return pods.find(uid); }
  const VmRecord* vm(const std::string& uuid) const { return vms.find(uuid); }
  const CgroupPath* vmScope(const std::string& uuid) const { return vmScopes.find(uuid); }
  const RuntimeOwner* runtimeOwner(const std::string& id) const { return id.empty() ? nullptr : runtimeIds.find(id); }
};

// `ids` with the runtime ids of `before` (a pod's old record, or none) replaced by those of `after`.
PersistentMap<std::string, RuntimeOwner> reindexRuntimeIds(PersistentMap<std::string, RuntimeOwner> ids,
                                                           const PodRecord* before, const PodRecord* after);

// What one decision changed: the tenants it touched (their records or scopes),
// and of those the ones whose records the store must write. The shared pool
// and the balance values before and after follow from the two states.
// A published state, shared: whoever looks into it holds it for as long as
// it looks. A decision published meanwhile replaces the ledger's own hold, and
// the state is freed with the last one. So a record pointer taken from a
// temporary (`ledger.state()->vm(uuid)`) would outlive its state: reaching
// into a temporary does not compile, only into a StatePtr with a name.
class StatePtr {
 public:
  StatePtr() = default;
  StatePtr(std::nullptr_t) {}  // NOLINT: as a shared_ptr converts
  template <typename T>
  StatePtr(std::shared_ptr<T> state) : state_(std::move(state)) {}  // NOLINT: as a shared_ptr converts

  const LedgerState* operator->() const& { return state_.get(); }
  const LedgerState& operator*() const& { return *state_; }
  const LedgerState* operator->() const&& = delete;
  const LedgerState& operator*() const&& = delete;
  const LedgerState* get() const& { return state_.get(); }
  const LedgerState* get() const&& = delete;

  explicit operator bool() const { return state_ != nullptr; }
  friend bool operator==(const StatePtr& a, const StatePtr& b) { return a.state_ == b.state_; }

 private:
  std::shared_ptr<const LedgerState> state_;
};

struct LedgerDelta {
  std::set<std::string> pods, vms;
  std::set<std::string> storedPods, storedVms;
  bool empty() const { return pods.empty() && vms.empty(); }
};

template <typename T>
struct Decision {
  T answer;
  StatePtr before, after;
  LedgerDelta delta;
  bool changes() const { return before != after; }
};

bool isDrainingOwner(const std::string& owner);

// What a tenant adds to the totals.
LedgerTotals podTotals(const PodRecord& pod);
LedgerTotals vmTotals(const VmRecord& vm, bool started, int64_t sharedVcpuMilli, uint64_t memoryOverheadBytes);

// A decision's working copy of the state: mutable books, and tenant changes
// that keep the totals and the delta as they go.
class NextState {
 public:
  NextState(StatePtr from, int64_t sharedVcpuMilli, uint64_t vmMemoryOverheadBytes);

  const LedgerState& before() const { return *before_; }
  const LedgerState& now() const { return next_; }
  CpuPool& pool() { return next_.pool; }
  NumaMemory& numa() { return next_.numa; }
  const LedgerDelta& delta() const { return delta_; }

  void putPod(PodRecord pod);
  void erasePod(const std::string& uid);
  void putVm(VmRecord vm);
  void eraseVm(const std::string& uuid);
  void setVmScope(const std::string& uuid, const CgroupPath& scope);
  void eraseVmScope(const std::string& uuid);

  // The shared pool's minimum follows the shared tenants' demand; the
  // decision is sealed and the next state built.
  template <typename T>
  Decision<T> finish(T answer) {
    seal();
    return Decision<T>{std::move(answer), before_, std::make_shared<const LedgerState>(std::move(next_)),
                       std::move(delta_)};
  }

 private:
  void seal();
  LedgerTotals vmContribution(const VmRecord& vm, bool started) const;

  StatePtr before_;
  LedgerState next_;
  LedgerDelta delta_;
  int64_t sharedVcpuMilli_;
  uint64_t vmMemoryOverheadBytes_;
};

// A decision that changes nothing: the same state before and after.
template <typename T>
Decision<T> unchanged(StatePtr state, T answer) {
  return Decision<T>{std::move(answer), state, state, {}};
}

// The shared pool's minimum for `totals`, never above what it holds now.
int sharedMinimumFor(const LedgerTotals& totals, const CpuPool& pool);

}  // namespace vri
