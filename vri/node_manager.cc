#include "vri/node_manager.h"

#include <cstdio>

#include "accounting/ledger_validation.h"
#include "vri/node_manager_pipeline.h"

namespace vri {

namespace {

using pipeline::asVoid;
using pipeline::describeContainer;
using pipeline::millisSince;
using pipeline::Stopwatch;

// Why a guarded release left the tenant alone, for the log.
std::string describeGuard(const ReleaseGuard& guard) {
  return guard.onlyUnbound ? "it has a runtime id or is gone"
                           : "runtime id " + guard.runtimeId + " is not the one it holds (or it is gone)";
}

}  // namespace

NodeManager::NodeManager(Ledger& ledger, CgroupSync& sync, EventHub& events, Logger& log, NodeFacts facts,
                         NodeManagerOptions options)
    : ledger_(ledger),
      sync_(sync),
      events_(events),
      log_(log),
      facts_(std::move(facts)),
      options_(std::move(options)),
      vanished_(options_.releaseGrace) {
  retryThread_ = std::thread([this] { retryLoop(); });
}

NodeManager::~NodeManager() {
  {
    MutexLock lock(retryMutex_);
    stopping_ = true;
  }
  retryWake_.notify_all();
  retryThread_.join();
}

Result<void> NodeManager::checkNotHalted() const {
  if (!halted()) return {};
  return Error(ErrorCode::kUnavailable,
               "vrid takes no decisions: an undo could not be committed and the ledger could not be reloaded; "
               "see vrid's log (a restart reloads it)");
}

void NodeManager::setHalted(bool halted) {
  MutexLock lock(retryMutex_);
  halted_ = halted;
}

bool NodeManager::writesPending() const {
  MutexLock lock(retryMutex_);
  return pending_;
}

void NodeManager::published(const LedgerState& before, const LedgerState& after) {
  const CpuSet was = before.shared(), now = after.shared();
  if (was != now) events_.publish(EventKind::kSharedPoolChanged, "", was.format() + " -> " + now.format());
}

ContainerPlacement NodeManager::asWritten(const StatePtr& now, const std::string& podUid,
                                          ContainerPlacement placed) const {
  if (!placed.exclusive.empty()) return placed;
  const PodRecord* pod = now->pod(podUid);
  placed.cpus = pod != nullptr ? sync_.runtimeSharedCpus(*now, *pod) : sync_.wideSharedCpus(*now);
  return placed;
}

Result<ContainerPlacement> NodeManager::admitContainer(const PodSpec& pod, const ContainerSpec& container,
                                                       const std::vector<std::string>& finished, WriteStats* stats) {
  const auto start = Stopwatch::now();
  const std::string tenant = containerTenant(pod.uid, container.name);
  Result<ContainerPlacement> result = [&]() -> Result<ContainerPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdmitContainer(writer.current(), pod, container, finished));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo, stats));
    return asWritten(writer.current(), pod.uid, decision.answer);
  }();
  const std::string detail = result.ok() ? describeContainer(*result) : "";
  return finish("admit", tenant, EventKind::kAdmitted, std::move(result), detail, start);
}

Result<ContainerPlacement> NodeManager::adoptOrAdmitContainer(const PodSpec& pod, const ContainerSpec& container,
                                                              const CpuSet& running) {
  const auto start = Stopwatch::now();
  const std::string tenant = containerTenant(pod.uid, container.name);
  bool adopting = false;
  Result<ContainerPlacement> result = [&]() -> Result<ContainerPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    const StatePtr from = writer.current();
    const PodRecord* known = from->pod(pod.uid);
    if (known != nullptr && known->containers.count(container.name)) {
      VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdmitContainer(from, pod, container, {}));
      VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
      return asWritten(writer.current(), pod.uid, decision.answer);
    }
    adopting = true;
    // Narrower than the shared pool: it holds those CPUs; otherwise it runs shared. A pod outside
    // kubelet's tree holds none: its containers are brought onto the shared pool.
    const CpuSet exclusive = pod.outsideKubeletTree || from->shared().isSubsetOf(running) ? CpuSet() : running;
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdoptContainer(from, pod, container, exclusive));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    if (!exclusive.empty()) return ContainerPlacement{exclusive, exclusive, {}, true};
    return asWritten(writer.current(), pod.uid, ContainerPlacement{exclusive, {}, {}, true});
  }();
  const std::string detail = result.ok() ? describeContainer(*result) : "";
  if (!adopting) return finish("admit", tenant, EventKind::kAdmitted, std::move(result), detail, start);
  return finish("adopt", tenant, EventKind::kAdopted, std::move(result), detail, start);
}

Result<bool> NodeManager::bindSandbox(const PodSpec& pod, const std::string& sandboxId) {
  const auto start = Stopwatch::now();
  const std::string tenant = podTenant(pod.uid);
  Result<bool> result = [&]() -> Result<bool> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideBindSandbox(writer.current(), pod, sandboxId));
    if (!decision.changes()) return false;
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    return decision.answer;
  }();
  if (result.ok() && !*result && sandboxId.empty()) return result;  // known already: nothing to say
  const std::string detail = sandboxId.empty() ? "recorded" : "sandbox " + sandboxId;
  return finish("admit", tenant, EventKind::kAdmitted, std::move(result), detail, start);
}

Result<std::vector<ContainerPlacement>> NodeManager::admitPod(const PodSpec& pod,
                                                              const std::vector<ContainerSpec>& containers) {
  const auto start = Stopwatch::now();
  const std::string tenant = podTenant(pod.uid);
  Result<std::vector<ContainerPlacement>> result = [&]() -> Result<std::vector<ContainerPlacement>> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdmitPod(writer.current(), pod, containers));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    for (ContainerPlacement& placed : decision.answer) placed = asWritten(writer.current(), pod.uid, placed);
    return decision.answer;
  }();
  std::string detail;
  if (result.ok()) {
    for (const auto& p : *result) detail += (detail.empty() ? "" : "; ") + describeContainer(p);
  }
  return finish("admit", tenant, EventKind::kAdmitted, std::move(result), detail, start);
}

Result<ContainerPlacement> NodeManager::resizeContainer(const std::string& podUid, const ContainerSpec& container) {
  const auto start = Stopwatch::now();
  const std::string tenant = containerTenant(podUid, container.name);
  Result<ContainerPlacement> result = [&]() -> Result<ContainerPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideResizeContainer(writer.current(), podUid, container));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kHoldFreedCpus));
    return asWritten(writer.current(), podUid, decision.answer);
  }();
  const std::string detail = result.ok() ? describeContainer(*result) : "";
  return finish("resize", tenant, EventKind::kResized, std::move(result), detail, start);
}

Result<bool> NodeManager::releaseContainer(const std::string& podUid, const std::string& name,
                                           const ReleaseGuard& guard) {
  const auto start = Stopwatch::now();
  const std::string tenant = containerTenant(podUid, name);
  Result<bool> result = [&]() -> Result<bool> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideReleaseContainer(writer.current(), podUid, name, guard));
    if (!decision.answer) return false;
    VRI_TRY(carryOutRelease(writer, decision, tenant));
    return true;
  }();
  if (result.ok() && !*result) {
    log_.info("release " + tenant + ": kept, " + describeGuard(guard));
    return false;
  }
  return finish("release", tenant, EventKind::kReleased, std::move(result), "", start);
}

Result<bool> NodeManager::releasePod(const std::string& podUid, const ReleaseGuard& guard) {
  const auto start = Stopwatch::now();
  const std::string tenant = podTenant(podUid);
  Result<bool> result = [&]() -> Result<bool> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideReleasePod(writer.current(), podUid, guard));
    if (!decision.answer) return false;
    VRI_TRY(carryOutRelease(writer, decision, tenant));
    return true;
  }();
  if (result.ok() && !*result) {
    log_.info("release " + tenant + ": kept, " + describeGuard(guard));
    return false;
  }
  return finish("release", tenant, EventKind::kReleased, std::move(result), "", start);
}

Result<ReconcileReport> NodeManager::startUp() {
  VRI_ASSIGN_OR_RETURN(NodeScan scan, sync_.scan());
  const ValidationReport validation = validateLedger(ledger_, scan);
  for (const std::string& line : validation.released) {
    log_.info("start-up: " + line);
    events_.publish(EventKind::kReleased, "", line);
  }
  for (const std::string& line : validation.adopted) {
    log_.info("start-up: " + line);
    events_.publish(EventKind::kAdopted, "", line);
  }
  for (const std::string& line : validation.unresolved) log_.warning("start-up: " + line);
  for (const std::string& line : validation.waiting) log_.info("start-up: " + line);
  for (const std::string& line : ledger_.loadProblems()) log_.warning("ledger: " + line);
  return reconcile(false);
}

Result<ReconcileReport> NodeManager::reconcile(bool dryRun) {
  Ledger::Writer writer(ledger_);
  return reconcileLocked(writer, dryRun);
}

Result<ReconcileReport> NodeManager::reconcileLocked(Ledger::Writer& writer, bool dryRun) {
  const auto start = Stopwatch::now();
  bool landed = false;
  auto attempt = [&]() VRI_REQUIRES(ledger_.writerMutex()) -> Result<ReconcileReport> {
    VRI_ASSIGN_OR_RETURN(NodeScan scan, sync_.scan());
    // Running VMs' scopes are runtime knowledge: published, never stored.
    std::map<std::string, std::optional<CgroupPath>> scopes;
    for (const ScannedVm& vm : scan.vms) {
      if (!vm.uuid.empty()) scopes[vm.uuid] = vm.scope.path;
    }
    if (!dryRun) {
      const Decision<bool> found = ledger_.decideVmScopes(writer.current(), scopes);
      if (found.changes()) writer.publish(found.after);
      const StatePtr now = writer.current();
      VRI_TRY(releaseVanished(writer, vanished_.update(*now, scan, options_.clock->now())));
    }
    const StatePtr now = writer.current();
    VRI_ASSIGN_OR_RETURN(SyncResult synced, sync_.reconcile(writer, *now, true, dryRun));
    ReconcileReport report;
    for (const Drift& d : synced.drift) report.drift.push_back(d.describe());
    for (const CgroupOp& op : synced.operations) report.operations.push_back(op.describe());
    report.notes = std::move(scan.notes);
    if (!dryRun && writesPending()) {
      // Everything is on the cgroupfs now: CPUs held for pending writes go back to the shared pool.
      const Decision<bool> back = ledger_.decideReleaseDraining(writer.current());
      if (back.changes()) {
        VRI_TRY(sync_.write(writer, back.before, back.after, back.delta));
        writer.publish(back.after);
        published(*back.before, *back.after);
      }
      MutexLock lock(retryMutex_);
      pending_ = false;
      landed = true;
    }
    return report;
  };
  auto report = attempt();
  ++reconciles_;
  if (!dryRun) {
    auto& outcome = !report.ok()                 ? reconcileOutcomes_.failed
                    : report->operations.empty() ? reconcileOutcomes_.clean
                                                 : reconcileOutcomes_.repaired;
    ++outcome;
    if (report.ok()) reconcileOutcomes_.differences += report->drift.size();
  }
  if (!report.ok()) {
    log_.error("reconcile: " + report.error().message());
    events_.publish(EventKind::kReconcileFailed, "", report.error().message());
    return report;
  }
  if (landed) {
    log_.info("reconcile: pending cgroup writes landed");
    events_.publish(EventKind::kWriteLanded, "", "pending cgroup writes landed");
  }
  if (!dryRun && !report->operations.empty()) {
    std::string detail = std::to_string(report->operations.size()) + " cgroup operations for " +
                         std::to_string(report->drift.size()) + " differences";
    if (!report->drift.empty()) detail += ", first: " + report->drift.front();
    log_.info("reconcile: " + detail + " (" + millisSince(start) + ")");
    events_.publish(EventKind::kDriftRepaired, "", detail);
  } else {
    log_.debug("reconcile: nothing to repair (" + millisSince(start) + ")");
  }
  return report;
}

Result<void> NodeManager::releaseVanished(Ledger::Writer& writer, const VanishedTenants::Due& due) {
  const std::string why =
      "gone from the node for " + std::to_string(options_.releaseGrace.count()) + " s or more; released";
  const auto released = [&](const std::string& tenant, const Result<Decision<bool>>& decision)
                            VRI_REQUIRES(ledger_.writerMutex()) -> Result<void> {
    if (!decision.ok()) return {};  // gone from the ledger meanwhile
    VRI_TRY(carryOutRelease(writer, *decision, tenant));
    log_.info("reconcile: " + tenant + ": " + why);
    events_.publish(EventKind::kReleased, tenant, why);
    return {};
  };
  for (const std::string& uid : due.pods) {
    VRI_TRY(released(podTenant(uid), ledger_.decideReleasePod(writer.current(), uid)));
  }
  for (const auto& [uid, name] : due.containers) {
    VRI_TRY(released(containerTenant(uid, name), ledger_.decideReleaseContainer(writer.current(), uid, name)));
  }
  for (const std::string& uuid : due.vms) {
    VRI_TRY(released(vmTenant(uuid), ledger_.decideReleaseVm(writer.current(), uuid)));
  }
  return {};
}

void NodeManager::retryLoop() {
  while (true) {
    {
      MutexLock lock(retryMutex_);
      while (!stopping_ && !pending_ && !halted_) options_.clock->wait(lock, retryWake_);
      // Pending: try again after the interval (a stop ends the wait early).
      const auto retry_at = options_.clock->now() + options_.retryInterval;
      while (!stopping_ && !options_.clock->waitUntil(lock, retryWake_, retry_at)) {
      }
      if (stopping_) return;
    }
    Ledger::Writer writer(ledger_);
    if (halted()) {
      if (writer.reload().ok() && reconcileLocked(writer, false).ok()) {
        setHalted(false);
        log_.info("ledger reloaded from the store and reconciled; taking decisions again");
      }
    } else {
      (void)reconcileLocked(writer, false);  // logs and publishes its own outcome
    }
  }
}

}  // namespace vri
