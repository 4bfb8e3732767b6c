#include "accounting/ledger.h"

#include <sstream>

#include "accounting/spec_amounts.h"
#include "base/amount_limits.h"
#include "base/quote.h"

namespace vri {

namespace {

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

std::string milli(int64_t value) { return std::to_string(value) + "m"; }

// Restores one owner's CPUs and memory into the books, or neither.
Result<void> restoreOwner(CpuPool& pool, NumaMemory& numa, const std::string& owner, const ExclusiveGrant& grant,
                          const MemoryBlocks& memory) {
  CpuPool pool_after = pool;
  if (!grant.all().empty()) VRI_TRY(pool_after.assign(owner, grant));
  if (!memory.empty()) VRI_TRY(numa.restore(owner, memory));
  pool = std::move(pool_after);
  return {};
}

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::open(std::shared_ptr<const Topology> topology, LedgerConfig config,
                                             std::unique_ptr<LedgerStore> store) {
  if (store == nullptr) return Error::invalidArgument("ledger without a store");
  std::unique_ptr<Ledger> ledger(new Ledger(std::move(topology), std::move(config), std::move(store)));
  {
    Writer writer(*ledger);
    VRI_ASSIGN_OR_RETURN(StatePtr loaded, ledger->loadState(writer, ledger->loadProblems_));
    writer.publish(std::move(loaded));
  }
  return ledger;
}

Result<StatePtr> Ledger::loadState(const Writer& writer, std::vector<std::string>& problems) const {
  CpuPoolConfig pool_config = policy().pool;
  pool_config.minSharedCpus = 0;  // set from the shared tenants once they are loaded
  VRI_ASSIGN_OR_RETURN(CpuPool pool, CpuPool::create(topology_, pool_config));
  VRI_ASSIGN_OR_RETURN(NumaMemory numa,
                       NumaMemory::create(*topology_, policy().reservedMemoryPerNode, policy().reservedMemoryTotal));
  VRI_ASSIGN_OR_RETURN(StoredLedger stored, writer.store().load());
  const auto [key, described] = policyMeta(policy());
  const auto previous = stored.meta.find(key);
  if (previous != stored.meta.end() && previous->second != described) {
    problems.push_back("allocator policy changed from " + previous->second + " to " + described +
                       ": placements already made are kept, new decisions follow the new policy");
  }
  if (previous == stored.meta.end() || previous->second != described) VRI_TRY(writer.store().setMeta(key, described));

  LedgerState state{0, std::move(pool), std::move(numa), {}, {}, {}, {}, {}};
  for (auto& [uid, pod] : stored.pods) {
    // An amount no node could hold (written before VRI checked them) is
    // reported, never fatal: the pod's overhead is dropped, a container kept out.
    if (auto amounts = checkPodAmounts(pod.spec); !amounts.ok()) {
      problems.push_back("pod " + pod.spec.name + ": overhead dropped: " + amounts.error().message());
      pod.spec.overheadCpuMilli = 0;
      pod.spec.overheadMemoryBytes = 0;
    }
    for (auto it = pod.containers.begin(); it != pod.containers.end();) {
      const ContainerRecord& c = it->second;
      auto restored = checkContainerAmounts(c.spec);
      if (restored.ok())
        restored = restoreOwner(state.pool, state.numa, containerTenant(uid, c.spec.name), {c.exclusive, {}}, c.memory);
      if (!restored.ok()) {
        problems.push_back("container " + pod.spec.name + "/" + c.spec.name +
                           " kept out: " + restored.error().message());
        it = pod.containers.erase(it);
        continue;
      }
      ++it;
    }
    state.totals += podTotals(pod);
    state.runtimeIds = reindexRuntimeIds(std::move(state.runtimeIds), nullptr, &pod);
    state.pods = state.pods.set(uid, std::move(pod));
  }
  for (auto& [uuid, vm] : stored.vms) {
    const ExclusiveGrant grant{vm.placement.exclusive, vm.placement.heldBack};
    auto restored = checkVmAmounts(vm.spec);
    if (restored.ok()) restored = restoreOwner(state.pool, state.numa, vmTenant(uuid), grant, vm.memory);
    if (!restored.ok()) {
      problems.push_back("VM " + vm.spec.cpu.name + " kept out: " + restored.error().message());
      continue;
    }
    state.totals += vmTotals(vm, false, policy().sharedVcpuMilli, policy().vmMemoryOverheadBytes);
    state.vms = state.vms.set(uuid, std::move(vm));
  }
  const int64_t shared_capacity = static_cast<int64_t>(state.pool.shared().count()) * 1000;
  if (state.totals.sharedDemandMilli > shared_capacity) {
    problems.push_back("shared tenants request " + milli(state.totals.sharedDemandMilli) + " but the shared pool has " +
                       std::to_string(state.pool.shared().count()) + " CPUs");
  }
  state.pool.followSharedDemand(sharedMinimumFor(state.totals, state.pool));
  return StatePtr(std::make_shared<const LedgerState>(std::move(state)));
}

StatePtr Ledger::state() const {
  MutexLock lock(stateMutex_);
  return current_;
}

StatePtr Ledger::Writer::current() const { return ledger_->state(); }

std::optional<PodRecord> Ledger::findPod(const std::string& uid) const {
  const StatePtr now = state();
  if (const PodRecord* pod = now->pod(uid)) return *pod;
  return std::nullopt;
}

std::optional<VmRecord> Ledger::findVm(const std::string& uuid) const {
  const StatePtr now = state();
  if (const VmRecord* vm = now->vm(uuid)) return *vm;
  return std::nullopt;
}

std::pair<std::string, std::string> Ledger::policyMeta(const LedgerConfig& config) {
  return {"policy", describePolicy(config.pool)};
}

LedgerChange Ledger::changeFor(const LedgerDelta& delta, const LedgerState& to) {
  LedgerChange change;
  for (const std::string& uid : delta.storedPods) {
    if (const PodRecord* pod = to.pod(uid)) {
      change.putPods.push_back(*pod);
    } else {
      change.deletePods.push_back(uid);
    }
  }
  for (const std::string& uuid : delta.storedVms) {
    if (const VmRecord* vm = to.vm(uuid)) {
      change.putVms.push_back(*vm);
    } else {
      change.deleteVms.push_back(uuid);
    }
  }
  return change;
}

Result<void> Ledger::Writer::commit(const LedgerDelta& delta, const LedgerState& to) {
  return store().apply(changeFor(delta, to));
}

Result<void> Ledger::Writer::commitChange(const LedgerChange& change) { return store().apply(change); }

void Ledger::Writer::reconfigure(LedgerConfig config, StatePtr state) {
  MutexLock lock(ledger_->stateMutex_);
  ledger_->config_ = std::make_shared<const LedgerConfig>(std::move(config));
  ledger_->current_ = std::move(state);
}

void Ledger::Writer::publish(StatePtr next) {
  MutexLock lock(ledger_->stateMutex_);
  ledger_->current_ = std::move(next);
}

Result<void> Ledger::Writer::reload() {
  std::vector<std::string> problems;
  VRI_ASSIGN_OR_RETURN(StatePtr loaded, ledger_->loadState(*this, problems));
  const StatePtr now = current();
  publish(std::make_shared<const LedgerState>(withRuntimeKnowledge(*loaded, *now, ledger_->policy())));
  return {};
}

LedgerState Ledger::withRuntimeKnowledge(const LedgerState& loaded, const LedgerState& now,
                                         const LedgerConfig& config) {
  LedgerState state = loaded;
  for (const auto& [uuid, scope] : now.vmScopes) {
    if (const VmRecord* vm = state.vm(uuid)) {
      state.totals -= vmTotals(*vm, false, config.sharedVcpuMilli, config.vmMemoryOverheadBytes);
      state.totals += vmTotals(*vm, true, config.sharedVcpuMilli, config.vmMemoryOverheadBytes);
      state.vmScopes = state.vmScopes.set(uuid, scope);
    }
  }
  state.sequence = now.sequence + 1;
  return state;
}

Result<void> Ledger::checkMemory(const LedgerState& state, uint64_t more, const std::string& who) const {
  const uint64_t admitted = state.totals.admittedMemoryBytes;
  if (policy().allocatableMemoryBytes == 0 || more == 0) return {};
  if (fitsWithin(admitted, more, policy().allocatableMemoryBytes)) return {};
  const uint64_t free = policy().allocatableMemoryBytes - std::min(admitted, policy().allocatableMemoryBytes);
  return Error::resourceExhausted(who + " needs " + std::to_string(more >> 20) + " MiB of memory; " +
                                  std::to_string(free >> 20) + " MiB of the " +
                                  std::to_string(policy().allocatableMemoryBytes >> 20) + " MiB allocatable are free");
}

Result<void> Ledger::checkSharedDemand(const LedgerState& state, int64_t more, const std::string& who) const {
  if (more <= 0) return {};
  const int64_t capacity = static_cast<int64_t>(state.pool.shared().count()) * 1000;
  if (fitsWithin(state.totals.sharedDemandMilli, more, capacity)) return {};
  return Error::resourceExhausted(who + " needs " + milli(more) + " of the shared pool; it has " +
                                  std::to_string(state.pool.shared().count()) + " CPUs and " +
                                  std::to_string(state.totals.sharedTenants) + " shared tenants already request " +
                                  milli(state.totals.sharedDemandMilli));
}

Result<std::vector<int>> Ledger::alignNodes(const LedgerState& state, const AlignmentRequest& request,
                                            const std::vector<int>& strictNodes) const {
  if (!strictNodes.empty()) {
    for (const auto& [resource, bytes] : request.memory) {
      const uint64_t free = state.numa.freeOn(strictNodes, resource);
      if (free < bytes) {
        std::string nodes;
        for (int node : strictNodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(node);
        return Error::resourceExhausted(request.who + ": its numatune nodes " + nodes + " cannot provide " +
                                        std::to_string(bytes >> 20) + " MiB of " + memoryResourceName(resource) + "; " +
                                        std::to_string(free >> 20) + " MiB are free there (" +
                                        state.numa.holdersOn(strictNodes, resource) + ")");
      }
    }
    return strictNodes;
  }
  TopologyManagerOptions options = policy().topologyManager;
  if (options.policy == TopologyPolicy::kNone) {
    // VRI's own alignment of NUMA-bound tenants: never refused, closest nodes first.
    options.policy = TopologyPolicy::kBestEffort;
    options.preferClosestNumaNodes = true;
  }
  VRI_ASSIGN_OR_RETURN(NumaAffinity affinity,
                       alignOnNuma(*topology_, state.pool.freeForExclusive(), state.numa, request, options));
  return affinity.nodes;
}

Decision<bool> Ledger::decideHoldDraining(const StatePtr& from, const std::string& tenant, const CpuSet& cpus) const {
  NextState n = next(from);
  const std::string owner = drainingTenant(tenant);
  CpuSet held = cpus & from->shared();
  if (const ExclusiveGrant* already = from->pool.grant(owner)) held |= already->all();
  if (held.empty()) return unchanged(from, true);
  n.pool().holdBack(owner, held);
  return n.finish(true);
}

Decision<bool> Ledger::decideReleaseDraining(const StatePtr& from) const {
  NextState n = next(from);
  bool any = false;
  for (const auto& [owner, grant] : from->grants()) {
    if (!isDrainingOwner(owner)) continue;
    n.pool().releaseOwner(owner);
    any = true;
  }
  if (!any) return unchanged(from, true);
  return n.finish(true);
}

Decision<bool> Ledger::decideVmScopes(const StatePtr& from,
                                      const std::map<std::string, std::optional<CgroupPath>>& scopes) const {
  NextState n = next(from);
  for (const auto& [uuid, scope] : scopes) {
    if (!from->vm(uuid)) continue;
    if (scope) {
      n.setVmScope(uuid, *scope);
    } else {
      n.eraseVmScope(uuid);
    }
  }
  if (n.delta().empty()) return unchanged(from, true);
  return n.finish(true);
}

}  // namespace vri
