#include "accounting/ledger.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "cgroup-model/quote.h"

namespace vri {

std::string containerOwner(const std::string& podUid, const std::string& name) { return "pod/" + podUid + "/" + name; }
std::string vmOwner(const std::string& uuid) { return "vm/" + uuid; }

namespace {

// Pool changes made while a decision is being taken, undone if it fails.
class Undo {
 public:
  void add(std::function<void()> step) { steps_.push_back(std::move(step)); }
  void run() {
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) (*it)();
    steps_.clear();
  }
  void dismiss() { steps_.clear(); }
  ~Undo() { run(); }

 private:
  std::vector<std::function<void()>> steps_;
};

std::string describePolicy(const CpuPoolConfig& pool) {
  std::ostringstream out;
  out << "reserved="
      << (pool.reserved.cpus ? pool.reserved.cpus->format() : "count:" + std::to_string(pool.reserved.count))
      << ";strict=" << pool.reserved.strict << ";full_pcpus_only=" << pool.take.fullPcpusOnly
      << ";distribute_across_numa=" << pool.take.distributeCpusAcrossNuma
      << ";align_by_socket=" << pool.take.alignBySocket << ";prefer_uncore=" << pool.take.preferAlignByUncoreCache
      << ";numa_fit=" << pool.take.numaFit;
  return out.str();
}

bool sameResources(const ContainerSpec& a, const ContainerSpec& b) {
  return a.init == b.init && a.cpuRequestMilli == b.cpuRequestMilli && a.cpuLimitMilli == b.cpuLimitMilli &&
         a.memoryLimitBytes == b.memoryLimitBytes && a.memoryRequestBytes == b.memoryRequestBytes;
}

bool sameVm(const VmSpec& a, const VmSpec& b) {
  const VmCpuRequest& x = a.cpu;
  const VmCpuRequest& y = b.cpu;
  return a.memoryBytes == b.memoryBytes && x.vcpus == y.vcpus && x.cpuPolicy == y.cpuPolicy &&
         x.mixedDedicatedVcpus == y.mixedDedicatedVcpus && x.guestThreadsPerCore == y.guestThreadsPerCore &&
         x.threadPolicy == y.threadPolicy && x.emulatorPolicy == y.emulatorPolicy && x.iothreads == y.iothreads &&
         x.iothreadPolicy == y.iothreadPolicy && x.preferredNumaNodes == y.preferredNumaNodes &&
         x.pinnedVcpuCpus == y.pinnedVcpuCpus;
}

Result<void> validateVmUuid(const std::string& uuid) {
  const bool ok =
      !uuid.empty() && uuid.size() <= 64 && uuid.find_first_not_of("0123456789abcdefABCDEF-") == std::string::npos;
  if (!ok) return Error::invalidArgument("invalid VM UUID " + quoteForMessage(uuid));
  return {};
}

std::string milli(int64_t value) { return std::to_string(value) + "m"; }

// The same error with more said at its end.
Error withSuffix(const Error& error, const std::string& suffix) {
  return Error(error.code(), error.message() + suffix, error.sysErrno());
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::open(std::shared_ptr<const Topology> topology, LedgerConfig config,
                                             std::unique_ptr<LedgerStore> store) {
  if (store == nullptr) return Error::invalidArgument("ledger without a store");
  CpuPoolConfig pool_config = config.pool;
  pool_config.minSharedCpus = 0;  // set from the shared tenants once they are loaded
  VRI_ASSIGN_OR_RETURN(CpuPool pool, CpuPool::create(topology, pool_config));
  VRI_ASSIGN_OR_RETURN(NumaMemory numa,
                       NumaMemory::create(*topology, config.reservedMemoryPerNode, config.reservedMemoryTotal));
  std::unique_ptr<Ledger> ledger(
      new Ledger(std::move(topology), std::move(config), std::move(pool), std::move(numa), std::move(store)));
  VRI_TRY(ledger->load());
  return ledger;
}

Result<void> Ledger::load() {
  VRI_ASSIGN_OR_RETURN(StoredLedger stored, store_->load());
  const std::string policy = describePolicy(config_.pool);
  const auto previous = stored.meta.find("policy");
  if (previous != stored.meta.end() && previous->second != policy) {
    loadProblems_.push_back("allocator policy changed from " + previous->second + " to " + policy +
                            ": placements already made are kept, new decisions follow the new policy");
  }
  if (previous == stored.meta.end() || previous->second != policy) VRI_TRY(store_->setMeta("policy", policy));

  for (auto& [uid, pod] : stored.pods) {
    for (auto it = pod.containers.begin(); it != pod.containers.end();) {
      const ContainerRecord& c = it->second;
      const std::string owner = containerOwner(uid, c.spec.name);
      Result<void> restored;
      if (!c.exclusive.empty()) restored = pool_.assign(owner, {c.exclusive, {}});
      if (restored.ok() && !c.memory.empty()) {
        restored = numa_.restore(owner, c.memory);
        if (!restored.ok() && !c.exclusive.empty()) (void)pool_.release(owner);
      }
      if (!restored.ok()) {
        loadProblems_.push_back("container " + pod.spec.name + "/" + c.spec.name +
                                " kept out: " + restored.error().message());
        it = pod.containers.erase(it);
        continue;
      }
      ++it;
    }
    pods_[uid] = std::move(pod);
  }
  for (auto& [uuid, vm] : stored.vms) {
    const ExclusiveGrant grant{vm.placement.exclusive, vm.placement.heldBack};
    Result<void> restored;
    if (!grant.all().empty()) restored = pool_.assign(vmOwner(uuid), grant);
    if (restored.ok() && !vm.memory.empty()) {
      restored = numa_.restore(vmOwner(uuid), vm.memory);
      if (!restored.ok() && !grant.all().empty()) (void)pool_.release(vmOwner(uuid));
    }
    if (!restored.ok()) {
      loadProblems_.push_back("VM " + vm.spec.cpu.name + " kept out: " + restored.error().message());
      continue;
    }
    vms_[uuid] = std::move(vm);
  }
  for (const auto& [uid, pod] : pods_) {
    for (const auto& [name, c] : pod.containers) {
      if (c.exclusive.empty()) {
        sharedDemandMilli_ += c.spec.cpuRequestMilli;
        ++sharedTenants_;
      }
    }
    admittedMemory_ += podMemoryBytes(pod);
  }
  for (const auto& [uuid, vm] : vms_) {
    const int64_t demand = vmSharedDemand(vm);
    sharedDemandMilli_ += demand;
    sharedTenants_ += demand > 0 ? 1 : 0;
    admittedMemory_ += vmMemory(vm.spec);
  }
  if (sharedDemandMilli_ > static_cast<int64_t>(pool_.shared().count()) * 1000) {
    loadProblems_.push_back("shared tenants request " + milli(sharedDemandMilli_) + " but the shared pool has " +
                            std::to_string(pool_.shared().count()) + " CPUs");
  }
  syncSharedMinimum();
  return {};
}

int64_t Ledger::vmSharedDemand(const VmRecord& vm) const {
  int shared_vcpus = 0;
  for (int cpu : vm.placement.vcpuCpus) shared_vcpus += cpu == VmCpuPlacement::kShared ? 1 : 0;
  return shared_vcpus * config_.sharedVcpuMilli;
}

void Ledger::syncSharedMinimum() {
  int minimum = 0;
  if (sharedTenants_ > 0) minimum = std::max<int64_t>(1, (sharedDemandMilli_ + 999) / 1000);
  minimum = std::min(minimum, pool_.shared().count());
  (void)pool_.setMinSharedCpus(minimum);  // never above the shared pool's size, so it cannot fail
}

Result<void> Ledger::checkMemory(uint64_t more, const std::string& who) const {
  if (config_.allocatableMemoryBytes == 0 || more == 0) return {};
  if (admittedMemory_ + more <= config_.allocatableMemoryBytes) return {};
  const uint64_t free = config_.allocatableMemoryBytes - std::min(admittedMemory_, config_.allocatableMemoryBytes);
  return Error::resourceExhausted(who + " needs " + std::to_string(more >> 20) + " MiB of memory; " +
                                  std::to_string(free >> 20) + " MiB of the " +
                                  std::to_string(config_.allocatableMemoryBytes >> 20) + " MiB allocatable are free");
}

Result<void> Ledger::checkSharedDemand(int64_t more, const std::string& who) const {
  if (more <= 0) return {};
  const int64_t capacity = static_cast<int64_t>(pool_.shared().count()) * 1000;
  if (sharedDemandMilli_ + more <= capacity) return {};
  return Error::resourceExhausted(
      who + " needs " + milli(more) + " of the shared pool; it has " + std::to_string(pool_.shared().count()) +
      " CPUs and " + std::to_string(sharedTenants_) + " shared tenants already request " + milli(sharedDemandMilli_));
}

Result<std::vector<int>> Ledger::alignNodes(const AlignmentRequest& request,
                                            const std::vector<int>& strictNodes) const {
  if (!strictNodes.empty()) {
    for (const auto& [resource, bytes] : request.memory) {
      const uint64_t free = numa_.freeOn(strictNodes, resource);
      if (free < bytes) {
        std::string nodes;
        for (int node : strictNodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(node);
        return Error::resourceExhausted(request.who + ": its numatune nodes " + nodes + " cannot provide " +
                                        std::to_string(bytes >> 20) + " MiB of " + memoryResourceName(resource) + "; " +
                                        std::to_string(free >> 20) + " MiB are free there");
      }
    }
    return strictNodes;
  }
  TopologyManagerOptions options = config_.topologyManager;
  if (options.policy == TopologyPolicy::kNone) {
    // VRI's own alignment of NUMA-bound tenants: never refused, closest nodes first.
    options.policy = TopologyPolicy::kBestEffort;
    options.preferClosestNumaNodes = true;
  }
  VRI_ASSIGN_OR_RETURN(NumaAffinity affinity,
                       alignOnNuma(*topology_, pool_.freeForExclusive(), numa_, request, options));
  return affinity.nodes;
}

Result<ContainerPlacement> Ledger::placeContainer(PodRecord& pod, const ContainerSpec& container,
                                                  const std::string& who, const std::vector<int>* podNodes) {
  const int cpus = exclusiveCpusFor(pod.spec, container);
  ContainerRecord record{container, {}, {}};
  if (cpus == 0) {
    VRI_TRY(checkSharedDemand(container.cpuRequestMilli, who));
    pod.containers[container.name] = record;
    return ContainerPlacement{{}, pool_.shared(), {}};
  }
  // As kubelet does, an app container first takes the CPUs its pod's init containers held.
  Undo undo;
  CpuSet reusable;
  if (!container.init) {
    for (auto& [name, other] : pod.containers) {
      if (!other.spec.init || other.exclusive.empty()) continue;
      const std::string owner = containerOwner(pod.spec.uid, name);
      const ExclusiveGrant grant = *pool_.grant(owner);
      (void)pool_.release(owner);
      undo.add([this, owner, grant] { (void)pool_.assign(owner, grant); });
      reusable |= other.exclusive;
    }
  }
  const std::string owner = containerOwner(pod.spec.uid, container.name);
  // A pinned container's CPUs and memory come from the same NUMA nodes.
  const uint64_t pinned_memory = container.memoryLimitBytes.value_or(0);
  const bool pinned = config_.pinGuaranteedMemory && pinned_memory > 0;
  const MemoryRequest memory_request = {{kRegularMemory, pinned_memory}};
  std::vector<int> nodes;
  if (podNodes != nullptr) {
    nodes = *podNodes;
  } else if (pinned || config_.topologyManager.policy != TopologyPolicy::kNone) {
    // The topology manager's policy applies to every container with exclusive CPUs, as in kubelet.
    VRI_ASSIGN_OR_RETURN(nodes, alignNodes({who, cpus, pinned ? memory_request : MemoryRequest{}}, {}));
  }
  auto chosen = pool_.allocate(owner, {cpus, nodes}, reusable);
  if (!chosen.ok()) {
    return withSuffix(chosen.error(),
                      "; " + std::to_string(sharedTenants_) + " shared tenants request " + milli(sharedDemandMilli_));
  }
  if (pinned) {
    auto blocks = numa_.allocate(owner, nodes, memory_request);
    if (!blocks.ok()) {
      (void)pool_.release(owner);
      return std::move(blocks).context(who).error();
    }
    record.memory = *blocks;
  }
  undo.dismiss();
  for (auto& [name, other] : pod.containers) {
    if (other.spec.init && !container.init) other.exclusive = CpuSet();  // handed on
  }
  record.exclusive = *chosen;
  pod.containers[container.name] = record;
  return ContainerPlacement{*chosen, *chosen, NumaMemory::mems(record.memory)};
}

Result<ContainerPlacement> Ledger::admitContainer(const PodSpec& pod, const ContainerSpec& container) {
  std::lock_guard lock(mutex_);
  return admitContainerLocked(pod, container, nullptr);
}

Result<std::vector<ContainerPlacement>> Ledger::admitPod(const PodSpec& pod,
                                                         const std::vector<ContainerSpec>& containers) {
  std::lock_guard lock(mutex_);
  // The pod's exclusive CPUs and pinned memory, aligned at once.
  int cpus = 0;
  uint64_t memory = 0;
  for (const ContainerSpec& c : containers) {
    const int n = exclusiveCpusFor(pod, c);
    if (n == 0 || c.init) continue;  // init containers hand their CPUs on; the app containers count
    cpus += n;
    if (config_.pinGuaranteedMemory) memory += c.memoryLimitBytes.value_or(0);
  }
  std::vector<int> nodes;
  const bool align =
      cpus > 0 && (config_.pinGuaranteedMemory || config_.topologyManager.policy != TopologyPolicy::kNone);
  if (align) {
    MemoryRequest request;
    if (memory > 0) request[kRegularMemory] = memory;
    VRI_ASSIGN_OR_RETURN(nodes, alignNodes({"pod " + (pod.name.empty() ? pod.uid : pod.name), cpus, request}, {}));
  }
  std::vector<ContainerPlacement> placements;
  std::vector<std::string> admitted_now;
  for (const ContainerSpec& c : containers) {
    const auto known = pods_.find(pod.uid);
    const bool existed = known != pods_.end() && known->second.containers.count(c.name);
    auto placed = admitContainerLocked(pod, c, align ? &nodes : nullptr);
    if (!placed.ok()) {
      // All or nothing: what this call admitted goes again.
      for (const std::string& name : admitted_now) (void)releaseContainerLocked(pod.uid, name);
      return placed.error();
    }
    if (!existed) admitted_now.push_back(c.name);
    placements.push_back(*placed);
  }
  return placements;
}

Result<ContainerPlacement> Ledger::admitContainerLocked(const PodSpec& pod, const ContainerSpec& container,
                                                        const std::vector<int>* podNodes) {
  VRI_TRY(validatePodUid(pod.uid));
  VRI_TRY(validateContainerId(container.name).context("container name"));
  if (!container.id.empty()) VRI_TRY(validateContainerId(container.id));
  if (container.cpuRequestMilli < 0 || container.cpuLimitMilli < 0)
    return Error::invalidArgument("negative CPU amount");
  const std::string who = "container " + (pod.name.empty() ? pod.uid : pod.name) + "/" + container.name;
  const auto existing = pods_.find(pod.uid);
  if (existing != pods_.end() && existing->second.spec.qos != pod.qos) {
    return Error::failedPrecondition("pod " + quoteForMessage(pod.uid) + " was admitted as " +
                                     std::string(qosClassName(existing->second.spec.qos)) + ", not " +
                                     std::string(qosClassName(pod.qos)));
  }
  if (existing != pods_.end()) {
    const auto known = existing->second.containers.find(container.name);
    if (known != existing->second.containers.end()) {
      if (!sameResources(known->second.spec, container)) {
        return Error::failedPrecondition(who + " is admitted with other resources; resize it instead");
      }
      // A retry, or kubelet recreating the container under a new id: same placement.
      if (known->second.spec.id != container.id && !container.id.empty()) {
        PodRecord updated = existing->second;
        updated.containers[container.name].spec.id = container.id;
        VRI_TRY(store_->putPod(updated));
        existing->second = std::move(updated);
      }
      const ContainerRecord& record = existing->second.containers.at(container.name);
      return ContainerPlacement{record.exclusive, record.exclusive.empty() ? pool_.shared() : record.exclusive,
                                NumaMemory::mems(record.memory)};
    }
  }
  PodRecord updated = existing != pods_.end() ? existing->second : PodRecord{pod, {}};
  const uint64_t memory_before = existing != pods_.end() ? podMemoryBytes(existing->second) : 0;
  PodRecord trial = updated;
  trial.containers[container.name] = ContainerRecord{container, {}, {}};
  VRI_TRY(checkMemory(podMemoryBytes(trial) - memory_before, who));

  const auto grants_before = updated.containers;
  VRI_ASSIGN_OR_RETURN(ContainerPlacement placement, placeContainer(updated, container, who, podNodes));
  auto stored = store_->putPod(updated);
  if (!stored.ok()) {
    // Undo the pool: release the new grant and give init containers theirs back.
    if (!placement.exclusive.empty()) (void)pool_.release(containerOwner(pod.uid, container.name));
    if (!placement.mems.empty()) (void)numa_.release(containerOwner(pod.uid, container.name));
    for (const auto& [name, c] : grants_before) {
      if (!c.exclusive.empty() && !pool_.grant(containerOwner(pod.uid, name))) {
        (void)pool_.assign(containerOwner(pod.uid, name), {c.exclusive, {}});
      }
    }
    return std::move(stored).context("commit " + who).error();
  }
  admittedMemory_ += podMemoryBytes(updated) - memory_before;
  if (placement.exclusive.empty()) {
    sharedDemandMilli_ += container.cpuRequestMilli;
    ++sharedTenants_;
  }
  pods_[pod.uid] = std::move(updated);
  syncSharedMinimum();
  if (placement.exclusive.empty()) placement.cpus = pool_.shared();
  return placement;
}

Result<ContainerPlacement> Ledger::resizeContainer(const std::string& podUid, const ContainerSpec& container) {
  std::lock_guard lock(mutex_);
  const auto pod_it = pods_.find(podUid);
  if (pod_it == pods_.end()) return Error::notFound("no pod " + quoteForMessage(podUid));
  const auto known = pod_it->second.containers.find(container.name);
  if (known == pod_it->second.containers.end()) {
    return Error::notFound("pod " + quoteForMessage(podUid) + " has no container " + quoteForMessage(container.name));
  }
  const std::string who = "container " + pod_it->second.spec.name + "/" + container.name;
  const ContainerRecord before = known->second;
  if (!before.memory.empty()) {
    return Error::failedPrecondition(who + " has NUMA-pinned memory; release it and admit it again to change its size");
  }
  PodRecord updated = pod_it->second;
  updated.containers.erase(container.name);
  const uint64_t memory_before = podMemoryBytes(pod_it->second);
  PodRecord trial = updated;
  trial.containers[container.name] = ContainerRecord{container, {}, {}};
  const uint64_t memory_after = podMemoryBytes(trial);
  if (memory_after > memory_before) VRI_TRY(checkMemory(memory_after - memory_before, who));

  // Take the old placement out of the books, place anew (keeping its CPUs where
  // it can), and put the old one back if that fails.
  const std::string owner = containerOwner(podUid, container.name);
  const bool was_shared = before.exclusive.empty();
  if (!was_shared) (void)pool_.release(owner);
  if (was_shared) {
    sharedDemandMilli_ -= before.spec.cpuRequestMilli;
    --sharedTenants_;
  }
  Result<ContainerPlacement> placed = Error::internal("not placed");
  const int cpus = exclusiveCpusFor(updated.spec, container);
  if (cpus == 0) {
    placed = placeContainer(updated, container, who);
  } else {
    auto chosen = pool_.allocate(owner, {cpus, {}}, before.exclusive);
    if (chosen.ok()) {
      updated.containers[container.name] = ContainerRecord{container, *chosen, {}};
      placed = ContainerPlacement{*chosen, *chosen, {}};
    } else {
      placed = std::move(chosen).context(who).error();
    }
  }
  const auto restore = [&] {
    if (was_shared) {
      sharedDemandMilli_ += before.spec.cpuRequestMilli;
      ++sharedTenants_;
    } else {
      (void)pool_.assign(owner, {before.exclusive, {}});
    }
  };
  if (!placed.ok()) {
    restore();
    return placed;
  }
  auto stored = store_->putPod(updated);
  if (!stored.ok()) {
    if (!placed->exclusive.empty()) (void)pool_.release(owner);
    restore();
    return std::move(stored).context("commit " + who).error();
  }
  if (placed->exclusive.empty()) {
    sharedDemandMilli_ += container.cpuRequestMilli;
    ++sharedTenants_;
  }
  admittedMemory_ = admittedMemory_ - memory_before + memory_after;
  pod_it->second = std::move(updated);
  syncSharedMinimum();
  if (placed->exclusive.empty()) placed->cpus = pool_.shared();
  return placed;
}

Result<void> Ledger::releaseContainer(const std::string& podUid, const std::string& name) {
  std::lock_guard lock(mutex_);
  return releaseContainerLocked(podUid, name);
}

Result<void> Ledger::releaseContainerLocked(const std::string& podUid, const std::string& name) {
  const auto pod_it = pods_.find(podUid);
  if (pod_it == pods_.end()) return Error::notFound("no pod " + quoteForMessage(podUid));
  const auto known = pod_it->second.containers.find(name);
  if (known == pod_it->second.containers.end()) {
    return Error::notFound("pod " + quoteForMessage(podUid) + " has no container " + quoteForMessage(name));
  }
  const ContainerRecord before = known->second;
  PodRecord updated = pod_it->second;
  updated.containers.erase(name);
  const std::string owner = containerOwner(podUid, name);
  if (!before.exclusive.empty()) (void)pool_.release(owner);
  if (!before.memory.empty()) (void)numa_.release(owner);
  auto stored = store_->putPod(updated);
  if (!stored.ok()) {
    if (!before.exclusive.empty()) (void)pool_.assign(owner, {before.exclusive, {}});
    if (!before.memory.empty()) (void)numa_.restore(owner, before.memory);
    return std::move(stored).context("commit release of " + name).error();
  }
  admittedMemory_ -= podMemoryBytes(pod_it->second) - podMemoryBytes(updated);
  if (before.exclusive.empty()) {
    sharedDemandMilli_ -= before.spec.cpuRequestMilli;
    --sharedTenants_;
  }
  pod_it->second = std::move(updated);
  syncSharedMinimum();
  return {};
}

Result<void> Ledger::releasePod(const std::string& podUid) {
  std::lock_guard lock(mutex_);
  const auto pod_it = pods_.find(podUid);
  if (pod_it == pods_.end()) return Error::notFound("no pod " + quoteForMessage(podUid));
  VRI_TRY(store_->deletePod(podUid));  // committed first: a crash now leaves no pod to release
  for (const auto& [name, c] : pod_it->second.containers) {
    if (!c.memory.empty()) (void)numa_.release(containerOwner(podUid, name));
    if (!c.exclusive.empty()) {
      (void)pool_.release(containerOwner(podUid, name));
    } else {
      sharedDemandMilli_ -= c.spec.cpuRequestMilli;
      --sharedTenants_;
    }
  }
  admittedMemory_ -= podMemoryBytes(pod_it->second);
  pods_.erase(pod_it);
  syncSharedMinimum();
  return {};
}

Result<VmCpuPlacement> Ledger::admitVm(const VmSpec& vm) { return admitOrReserveVm(vm, false); }
Result<VmCpuPlacement> Ledger::reserveVm(const VmSpec& vm) { return admitOrReserveVm(vm, true); }

Result<VmCpuPlacement> Ledger::admitOrReserveVm(const VmSpec& vm, bool defined) {
  VRI_TRY(validateVmUuid(vm.uuid));
  const std::string who = "VM " + (vm.cpu.name.empty() ? vm.uuid : vm.cpu.name);
  std::lock_guard lock(mutex_);
  const auto existing = vms_.find(vm.uuid);
  if (existing != vms_.end()) {
    if (!sameVm(existing->second.spec, vm)) {
      return Error::failedPrecondition(who + " is admitted with another CPU or memory request; release it first");
    }
    if (existing->second.defined && !defined) {  // the reserved VM starts
      VmRecord started = existing->second;
      started.defined = false;
      VRI_TRY(store_->putVm(started));
      existing->second = std::move(started);
    }
    return existing->second.placement;
  }
  VRI_TRY(checkMemory(vmMemory(vm), who));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t shared_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * config_.sharedVcpuMilli;
  VRI_TRY(checkSharedDemand(shared_demand, who));
  // The VM's own shared vCPUs count against what its exclusive CPUs may take away.
  if (shared_demand > 0) {
    (void)pool_.setMinSharedCpus(
        std::min<int>(pool_.shared().count(), static_cast<int>((sharedDemandMilli_ + shared_demand + 999) / 1000)));
  }
  // A VM with dedicated CPUs, hugepages or a strict numatune is NUMA-bound: its
  // CPUs and memory come from the same nodes.
  const std::string owner = vmOwner(vm.uuid);
  const bool numa_bound = !dedicated.empty() || vm.hugepageSize != 0 || !vm.strictNumaNodes.empty();
  const MemoryRequest memory_request = {{vm.hugepageSize, vm.memoryBytes}};
  VmCpuRequest cpu_request = vm.cpu;
  std::vector<int> nodes;
  if (numa_bound && !vm.cpu.pinnedVcpuCpus.empty()) {
    // The user chose the CPUs; memory follows them to their NUMA nodes.
    for (int cpu : vm.cpu.pinnedVcpuCpus) {
      const auto* info = cpu == VmCpuPlacement::kShared ? nullptr : topology_->cpu(cpu);
      if (info != nullptr && std::find(nodes.begin(), nodes.end(), info->numaNode) == nodes.end()) {
        nodes.push_back(info->numaNode);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    if (!vm.strictNumaNodes.empty()) nodes = vm.strictNumaNodes;
  } else if (numa_bound) {
    int exclusive_cpus = 0;
    if (auto dry = planVmCpus(*topology_, pool_.freeForExclusive(), vm.cpu, config_.pool.take); dry.ok()) {
      exclusive_cpus = (dry->exclusive | dry->heldBack).count();
    }
    auto aligned = alignNodes({who, exclusive_cpus, memory_request}, vm.strictNumaNodes);
    if (!aligned.ok()) {
      syncSharedMinimum();
      return aligned.error();
    }
    nodes = *aligned;
    if (cpu_request.preferredNumaNodes.empty()) cpu_request.preferredNumaNodes = nodes;
  }
  auto placement = pool_.allocateVm(owner, cpu_request);
  if (!placement.ok()) {
    syncSharedMinimum();
    return withSuffix(placement.error(),
                      "; " + std::to_string(sharedTenants_) + " shared tenants request " + milli(sharedDemandMilli_));
  }
  MemoryBlocks blocks;
  if (numa_bound && vm.memoryBytes > 0) {
    auto taken = numa_.allocate(owner, nodes, memory_request);
    if (!taken.ok()) {
      if (pool_.grant(owner)) (void)pool_.release(owner);
      syncSharedMinimum();
      return std::move(taken).context(who).error();
    }
    blocks = *taken;
    placement->mems = NumaMemory::mems(blocks);
  }
  const VmRecord record{vm, *placement, blocks, defined};
  auto stored = store_->putVm(record);
  if (!stored.ok()) {
    if (pool_.grant(owner)) (void)pool_.release(owner);
    if (!blocks.empty()) (void)numa_.release(owner);
    syncSharedMinimum();
    return std::move(stored).context("commit " + who).error();
  }
  sharedDemandMilli_ += shared_demand;
  sharedTenants_ += shared_demand > 0 ? 1 : 0;
  admittedMemory_ += vmMemory(vm);
  vms_[vm.uuid] = record;
  syncSharedMinimum();
  return *placement;
}

Result<VmCpuPlacement> Ledger::resizeVm(const VmSpec& vm) {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(vm.uuid);
  if (it == vms_.end()) return Error::notFound("no VM " + quoteForMessage(vm.uuid));
  if (sameVm(it->second.spec, vm)) return it->second.placement;
  const std::string who = "VM " + (vm.cpu.name.empty() ? vm.uuid : vm.cpu.name);
  const VmRecord before = it->second;
  if (!before.memory.empty() &&
      (vm.memoryBytes != before.spec.memoryBytes || vm.hugepageSize != before.spec.hugepageSize ||
       vm.strictNumaNodes != before.spec.strictNumaNodes)) {
    return Error::failedPrecondition(who +
                                     " has NUMA-bound memory; release it and admit it again to change its memory");
  }
  const uint64_t memory_before = vmMemory(before.spec), memory_after = vmMemory(vm);
  if (memory_after > memory_before) VRI_TRY(checkMemory(memory_after - memory_before, who));
  VRI_ASSIGN_OR_RETURN(std::vector<int> dedicated, dedicatedVcpus(vm.cpu));
  const int64_t old_demand = vmSharedDemand(before);
  const int64_t new_demand = (vm.cpu.vcpus - static_cast<int>(dedicated.size())) * config_.sharedVcpuMilli;

  // Out of the books, placed anew (inside its old CPUs first), back in if that fails.
  const std::string owner = vmOwner(vm.uuid);
  const ExclusiveGrant old_grant{before.placement.exclusive, before.placement.heldBack};
  if (!old_grant.all().empty()) (void)pool_.release(owner);
  sharedDemandMilli_ -= old_demand;
  sharedTenants_ -= old_demand > 0 ? 1 : 0;
  const auto restore = [&] {
    // The old minimum first: the old grant fitted beside it, and fits again.
    sharedDemandMilli_ += old_demand;
    sharedTenants_ += old_demand > 0 ? 1 : 0;
    syncSharedMinimum();
    if (!old_grant.all().empty()) (void)pool_.assign(owner, old_grant);
  };
  if (auto shared = checkSharedDemand(new_demand, who); !shared.ok()) {
    restore();
    return shared.error();
  }
  if (new_demand > 0) {
    (void)pool_.setMinSharedCpus(
        std::min<int>(pool_.shared().count(), static_cast<int>((sharedDemandMilli_ + new_demand + 999) / 1000)));
  }
  auto placement = planVmCpus(*topology_, old_grant.all(), vm.cpu, config_.pool.take);
  if (!placement.ok()) {
    VmCpuRequest nearby = vm.cpu;
    if (nearby.preferredNumaNodes.empty()) {
      for (int cpu : old_grant.all()) {
        const int node = topology_->cpu(cpu)->numaNode;
        if (std::find(nearby.preferredNumaNodes.begin(), nearby.preferredNumaNodes.end(), node) ==
            nearby.preferredNumaNodes.end()) {
          nearby.preferredNumaNodes.push_back(node);
        }
      }
    }
    placement = planVmCpus(*topology_, pool_.freeForExclusive(), nearby, config_.pool.take);
  }
  if (placement.ok() && !(placement->exclusive | placement->heldBack).empty()) {
    auto assigned = pool_.assign(owner, {placement->exclusive, placement->heldBack});
    if (!assigned.ok()) placement = std::move(assigned).error();
  }
  if (!placement.ok()) {
    restore();
    return std::move(placement).context(who).error();
  }
  placement->mems = before.placement.mems;  // the memory stays where it is
  const VmRecord record{vm, *placement, before.memory, before.defined};
  auto stored = store_->putVm(record);
  if (!stored.ok()) {
    if (pool_.grant(owner)) (void)pool_.release(owner);
    restore();
    return std::move(stored).context("commit " + who).error();
  }
  sharedDemandMilli_ += new_demand;
  sharedTenants_ += new_demand > 0 ? 1 : 0;
  admittedMemory_ = admittedMemory_ - memory_before + memory_after;
  it->second = record;
  syncSharedMinimum();
  return *placement;
}

Result<void> Ledger::releaseVm(const std::string& uuid) {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(uuid);
  if (it == vms_.end()) return Error::notFound("no VM " + quoteForMessage(uuid));
  VRI_TRY(store_->deleteVm(uuid));
  if (pool_.grant(vmOwner(uuid))) (void)pool_.release(vmOwner(uuid));
  if (!it->second.memory.empty()) (void)numa_.release(vmOwner(uuid));
  const int64_t demand = vmSharedDemand(it->second);
  sharedDemandMilli_ -= demand;
  sharedTenants_ -= demand > 0 ? 1 : 0;
  admittedMemory_ -= vmMemory(it->second.spec);
  vms_.erase(it);
  syncSharedMinimum();
  return {};
}

Result<void> Ledger::adoptContainer(const PodSpec& pod, const ContainerSpec& container, const CpuSet& exclusive) {
  VRI_TRY(validatePodUid(pod.uid));
  VRI_TRY(validateContainerId(container.name).context("container name"));
  std::lock_guard lock(mutex_);
  PodRecord updated = pods_.count(pod.uid) ? pods_.at(pod.uid) : PodRecord{pod, {}};
  if (updated.containers.count(container.name)) {
    return Error(ErrorCode::kAlreadyExists, "container " + container.name + " of pod " + pod.uid + " is known");
  }
  const std::string owner = containerOwner(pod.uid, container.name);
  if (!exclusive.empty()) VRI_TRY(pool_.assign(owner, {exclusive, {}}));
  const uint64_t memory_before = pods_.count(pod.uid) ? podMemoryBytes(pods_.at(pod.uid)) : 0;
  updated.containers[container.name] = ContainerRecord{container, exclusive, {}};
  auto stored = store_->putPod(updated);
  if (!stored.ok()) {
    if (!exclusive.empty()) (void)pool_.release(owner);
    return stored;
  }
  admittedMemory_ += podMemoryBytes(updated) - memory_before;
  if (exclusive.empty()) {
    sharedDemandMilli_ += container.cpuRequestMilli;
    ++sharedTenants_;
  }
  pods_[pod.uid] = std::move(updated);
  syncSharedMinimum();
  return {};
}

Result<void> Ledger::adoptVm(const VmSpec& vm, const VmCpuPlacement& placement) {
  VRI_TRY(validateVmUuid(vm.uuid));
  std::lock_guard lock(mutex_);
  if (vms_.count(vm.uuid)) return Error(ErrorCode::kAlreadyExists, "VM " + vm.uuid + " is known");
  const ExclusiveGrant grant{placement.exclusive, placement.heldBack};
  if (!grant.all().empty()) VRI_TRY(pool_.assign(vmOwner(vm.uuid), grant));
  const VmRecord record{vm, placement, {}, false};
  auto stored = store_->putVm(record);
  if (!stored.ok()) {
    if (!grant.all().empty()) (void)pool_.release(vmOwner(vm.uuid));
    return stored;
  }
  const int64_t demand = vmSharedDemand(record);
  sharedDemandMilli_ += demand;
  sharedTenants_ += demand > 0 ? 1 : 0;
  admittedMemory_ += vmMemory(vm);
  vms_[vm.uuid] = record;
  syncSharedMinimum();
  return {};
}

LedgerSnapshot Ledger::snapshot() const {
  std::lock_guard lock(mutex_);
  return LedgerSnapshot{pool_.reserved(),   pool_.shared(), pool_.grants(),  pods_, vms_,
                        sharedDemandMilli_, sharedTenants_, admittedMemory_, numa_};
}

CpuSet Ledger::sharedCpus() const {
  std::lock_guard lock(mutex_);
  return pool_.shared();
}

std::optional<PodRecord> Ledger::findPod(const std::string& uid) const {
  std::lock_guard lock(mutex_);
  const auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

std::optional<VmRecord> Ledger::findVm(const std::string& uuid) const {
  std::lock_guard lock(mutex_);
  const auto it = vms_.find(uuid);
  if (it == vms_.end()) return std::nullopt;
  return it->second;
}

Result<void> checkLedgerInvariants(const LedgerSnapshot& s, const Topology& topology, const LedgerConfig& config) {
  CpuSet owned;
  for (const auto& [owner, grant] : s.grants) {
    if (grant.all().intersects(owned))
      return Error::internal("CPUs " + (grant.all() & owned).format() + " in two exclusive sets");
    if (grant.all().intersects(s.reserved)) return Error::internal(owner + " holds reserved CPUs");
    if (!grant.all().isSubsetOf(topology.onlineCpus()))
      return Error::internal(owner + " holds CPUs that are not online");
    owned |= grant.all();
  }
  const CpuSet base = config.pool.reserved.strict ? topology.onlineCpus() - s.reserved : topology.onlineCpus();
  if (s.shared != base - owned) {
    return Error::internal("shared pool " + s.shared.format() + " is not " + (base - owned).format());
  }
  if (s.sharedTenants > 0 && s.shared.empty()) return Error::internal("the shared pool is empty under shared tenants");
  if (s.sharedDemandMilli > static_cast<int64_t>(s.shared.count()) * 1000) {
    return Error::internal("shared tenants request " + std::to_string(s.sharedDemandMilli) + "m of " +
                           std::to_string(s.shared.count()) + " shared CPUs");
  }
  if (config.allocatableMemoryBytes > 0 && s.admittedMemoryBytes > config.allocatableMemoryBytes) {
    return Error::internal("admitted memory above allocatable");
  }
  size_t records_with_cpus = 0;
  for (const auto& [uid, pod] : s.pods) {
    for (const auto& [name, c] : pod.containers) {
      if (c.exclusive.empty()) continue;
      ++records_with_cpus;
      const auto grant = s.grants.find(containerOwner(uid, name));
      if (grant == s.grants.end() || grant->second.cpus != c.exclusive) {
        return Error::internal("container " + name + " of pod " + uid + " disagrees with the pool");
      }
    }
  }
  for (const auto& [uuid, vm] : s.vms) {
    if (vm.placement.exclusive.empty() && vm.placement.heldBack.empty()) continue;
    ++records_with_cpus;
    const auto grant = s.grants.find(vmOwner(uuid));
    if (grant == s.grants.end() || grant->second.cpus != vm.placement.exclusive ||
        grant->second.heldBack != vm.placement.heldBack) {
      return Error::internal("VM " + uuid + " disagrees with the pool");
    }
  }
  if (records_with_cpus != s.grants.size()) return Error::internal("the pool holds grants no tenant records");
  // NUMA memory: no node over-committed, and blocks as the records say.
  std::map<std::string, MemoryBlocks> recorded;
  for (const auto& [uid, pod] : s.pods) {
    for (const auto& [name, c] : pod.containers) {
      if (!c.memory.empty()) recorded[containerOwner(uid, name)] = c.memory;
    }
  }
  for (const auto& [uuid, vm] : s.vms) {
    if (vm.memory.empty()) continue;
    recorded[vmOwner(uuid)] = vm.memory;
    if (vm.placement.mems != NumaMemory::mems(vm.memory))
      return Error::internal("VM " + uuid + " mems disagree with its memory");
  }
  if (recorded != s.numa.blocks()) return Error::internal("NUMA memory blocks disagree with the tenants' records");
  std::map<std::pair<int, MemoryResource>, uint64_t> assigned;
  for (const auto& [owner, blocks] : recorded) {
    for (const auto& [node, resources] : blocks) {
      for (const auto& [resource, bytes] : resources) assigned[{node, resource}] += bytes;
    }
  }
  for (const auto& [key, bytes] : assigned) {
    const NumaMemoryCell& cell = s.numa.cell(key.first, key.second);
    if (bytes != cell.assigned || cell.assigned > cell.allocatable()) {
      return Error::internal("NUMA node " + std::to_string(key.first) + " " + memoryResourceName(key.second) +
                             " is over-committed or miscounted");
    }
  }
  return {};
}

}  // namespace vri
