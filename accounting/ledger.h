// Ledger: the single source of truth for the node's tenants and their CPUs
// and memory, for pods and VMs alike.
//
// Every decision is checked against one pool, committed to the store, and only
// then acknowledged; a decision that cannot be committed is undone. Admits are
// idempotent: the same request for the same identity returns the same
// placement (a pod by UID, a container by pod UID and name, a VM by UUID).
// Safe to call from many threads.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "accounting/cpu_pool.h"
#include "accounting/ledger_records.h"
#include "accounting/ledger_store.h"
#include "accounting/topology_manager.h"

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

struct ContainerPlacement {
  CpuSet exclusive;  // empty: runs in the shared pool
  CpuSet cpus;       // cpuset.cpus now: the exclusive CPUs or the shared pool
  CpuSet mems;       // cpuset.mems of a NUMA-pinned container; empty: all nodes
};

struct LedgerSnapshot {
  CpuSet reserved;
  CpuSet shared;
  std::map<std::string, ExclusiveGrant> grants;
  std::map<std::string, PodRecord> pods;
  std::map<std::string, VmRecord> vms;
  int64_t sharedDemandMilli = 0;
  int sharedTenants = 0;
  uint64_t admittedMemoryBytes = 0;
  NumaMemory numa;
};

class Ledger {
 public:
  // Loads what the store holds. Tenants whose placement no longer fits (CPUs
  // gone offline or now reserved, overlaps) are kept out and listed in
  // loadProblems(); a changed allocator policy is noted there, not refused.
  static Result<std::unique_ptr<Ledger>> open(std::shared_ptr<const Topology> topology, LedgerConfig config,
                                              std::unique_ptr<LedgerStore> store);

  Result<ContainerPlacement> admitContainer(const PodSpec& pod, const ContainerSpec& container);
  // The topology manager's scope pod: admits a pod's containers together,
  // their exclusive CPUs and pinned memory aligned on the same NUMA nodes; all
  // or nothing.
  Result<std::vector<ContainerPlacement>> admitPod(const PodSpec& pod, const std::vector<ContainerSpec>& containers);
  // Changes a container's resources in place when the pool allows it.
  Result<ContainerPlacement> resizeContainer(const std::string& podUid, const ContainerSpec& container);
  Result<void> releaseContainer(const std::string& podUid, const std::string& name);
  Result<void> releasePod(const std::string& podUid);

  Result<VmCpuPlacement> admitVm(const VmSpec& vm);
  // Define-time placement: reserves CPUs and NUMA memory for a VM that is
  // defined but not running; admitVm with the same spec later starts it on
  // exactly that placement. A reservation survives restarts and the start-up check.
  Result<VmCpuPlacement> reserveVm(const VmSpec& vm);
  // Changes a VM's CPU and memory request. A VM that fits in the CPUs it holds
  // keeps them; one that grows may have its vCPUs placed anew, on the NUMA
  // nodes it already uses where possible.
  Result<VmCpuPlacement> resizeVm(const VmSpec& vm);
  Result<void> releaseVm(const std::string& uuid);

  // Takes over a tenant found running, with the CPUs it holds now (refused
  // when they are reserved, offline or another tenant's).
  Result<void> adoptContainer(const PodSpec& pod, const ContainerSpec& container, const CpuSet& exclusive);
  Result<void> adoptVm(const VmSpec& vm, const VmCpuPlacement& placement);

  // Everything at once (reports, the cgroup tree); the narrow readers below are cheaper.
  LedgerSnapshot snapshot() const;
  CpuSet sharedCpus() const;
  std::optional<PodRecord> findPod(const std::string& uid) const;
  std::optional<VmRecord> findVm(const std::string& uuid) const;
  const LedgerConfig& config() const { return config_; }
  const std::vector<std::string>& loadProblems() const { return loadProblems_; }
  const Topology& topology() const { return *topology_; }

 private:
  Ledger(std::shared_ptr<const Topology> topology, LedgerConfig config, CpuPool pool, NumaMemory numa,
         std::unique_ptr<LedgerStore> store)
      : topology_(std::move(topology)),
        config_(std::move(config)),
        pool_(std::move(pool)),
        numa_(std::move(numa)),
        store_(std::move(store)) {}

  Result<void> load();
  int64_t vmSharedDemand(const VmRecord& vm) const;
  uint64_t vmMemory(const VmSpec& vm) const { return vm.memoryBytes + config_.vmMemoryOverheadBytes; }
  Result<void> checkMemory(uint64_t more, const std::string& who) const;
  Result<void> checkSharedDemand(int64_t more, const std::string& who) const;
  void syncSharedMinimum();
  Result<VmCpuPlacement> admitOrReserveVm(const VmSpec& vm, bool defined);
  // `podNodes`: the NUMA nodes the whole pod was aligned on (scope pod); null: align the container alone.
  Result<ContainerPlacement> placeContainer(PodRecord& pod, const ContainerSpec& container, const std::string& who,
                                            const std::vector<int>* podNodes = nullptr);
  Result<ContainerPlacement> admitContainerLocked(const PodSpec& pod, const ContainerSpec& container,
                                                  const std::vector<int>* podNodes);
  Result<void> releaseContainerLocked(const std::string& podUid, const std::string& name);
  // The NUMA nodes a NUMA-bound tenant's CPUs and memory come from.
  Result<std::vector<int>> alignNodes(const AlignmentRequest& request, const std::vector<int>& strictNodes) const;

  mutable std::mutex mutex_;
  std::shared_ptr<const Topology> topology_;
  LedgerConfig config_;
  CpuPool pool_;
  NumaMemory numa_;
  std::unique_ptr<LedgerStore> store_;
  std::map<std::string, PodRecord> pods_;
  std::map<std::string, VmRecord> vms_;
  int64_t sharedDemandMilli_ = 0;
  int sharedTenants_ = 0;
  uint64_t admittedMemory_ = 0;
  std::vector<std::string> loadProblems_;
};

// Owner names in the CPU pool.
std::string containerOwner(const std::string& podUid, const std::string& name);
std::string vmOwner(const std::string& uuid);

// The ledger's invariants, checked by tests after every step: no CPU in two
// exclusive sets, no reserved CPU exclusive, shared = online - exclusive - held
// back, the shared pool non-empty and large enough for the shared tenants,
// memory within allocatable, no NUMA node over-committed in any resource, and
// every tenant's memory blocks matching its cpuset.mems.
Result<void> checkLedgerInvariants(const LedgerSnapshot& snapshot, const Topology& topology,
                                   const LedgerConfig& config);

}  // namespace vri
