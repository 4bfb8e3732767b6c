#include "vri/node_manager.h"

#include <cstdio>

#include "accounting/ledger_validation.h"

namespace vri {

namespace {

using Stopwatch = std::chrono::steady_clock;  // how long a decision took, for the log

std::string millisSince(Stopwatch::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

std::string describeContainer(const ContainerPlacement& p) {
  std::string out = "cpus " + p.cpus.format() + (p.exclusive.empty() ? " (shared)" : " (exclusive)");
  if (!p.mems.empty()) out += " mems " + p.mems.format();
  return out;
}

std::string describeVm(const VmCpuPlacement& p) {
  std::string out = "vcpus";  // id:cpu
  for (const auto& [vcpu, cpu] : p.vcpuCpus)
    out += " " + std::to_string(vcpu) + ":" + (cpu == VmCpuPlacement::kShared ? "shared" : std::to_string(cpu));
  if (!p.exclusive.empty()) out += ", exclusive " + p.exclusive.format();
  if (!p.mems.empty()) out += ", mems " + p.mems.format();
  return out;
}

Result<void> asVoid(const Result<bool>& done) {
  if (!done.ok()) return done.error();
  return {};
}

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

template <typename T>
Result<void> NodeManager::carryOut(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                                   OnWriteFailure onFailure, WriteStats* stats) {
  if (!decision.changes()) return {};
  VRI_TRY(writer.commit(decision.delta, *decision.after).context("commit"));
  const auto writing = Stopwatch::now();
  auto written = sync_.write(writer, decision.before, decision.after, decision.delta);
  if (stats != nullptr) stats->took = std::chrono::duration_cast<std::chrono::microseconds>(Stopwatch::now() - writing);
  if (!written.ok() && onFailure == OnWriteFailure::kUndo) return undo(writer, decision, tenant, written.error());
  StatePtr next = decision.after;
  if (written.ok()) {
    if (stats != nullptr) stats->writes = *written;
  } else {
    // The decision stands; the CPUs it freed wait out of every pool until its writes land.
    const CpuSet freed = decision.after->shared() - decision.before->shared();
    next = ledger_.decideHoldDraining(decision.after, tenant, freed).after;
    const std::string detail = "writing the cgroups failed (" + written.error().message() + "); retrying" +
                               (freed.empty() ? "" : ", CPUs " + freed.format() + " held until it lands");
    log_.error(tenant + ": " + detail);
    events_.publish(EventKind::kWritePending, tenant, detail);
    {
      MutexLock lock(retryMutex_);
      pending_ = true;
    }
    retryWake_.notify_all();
  }
  writer.publish(next);
  published(*decision.before, *next);
  return {};
}

template <typename T>
Error NodeManager::undo(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                        const Error& cause) {
  if (auto reverted = writer.commit(decision.delta, *decision.before); !reverted.ok()) {
    // The store holds a decision nobody was told of: take no more until the ledger is read back and written out.
    setHalted(true);
    const std::string detail = "the undo of a failed cgroup write could not be committed (" +
                               reverted.error().message() + "); reloading the ledger";
    log_.error(tenant + ": " + detail);
    events_.publish(EventKind::kHalted, tenant, detail);
    if (writer.reload().ok() && reconcileLocked(writer, false).ok()) {
      setHalted(false);
      log_.info("ledger reloaded from the store and reconciled; taking decisions again");
    } else {
      retryWake_.notify_all();  // the retry thread reloads until it can
    }
    return Error(ErrorCode::kUnavailable,
                 "writing the cgroups failed (" + cause.message() +
                     ") and undoing the decision could not be committed: " + reverted.error().message());
  }
  if (auto restored = sync_.write(writer, decision.after, decision.before, decision.delta); !restored.ok()) {
    log_.error(tenant + ": restoring the cgroups after a failed write: " + restored.error().message() +
               "; a reconcile follows");
    MutexLock lock(retryMutex_);
    pending_ = true;
    retryWake_.notify_all();
  }
  return Error::internal("writing the cgroups failed, nothing was changed: " + cause.message());
}

template <typename T>
Result<T> NodeManager::finish(const std::string& action, const std::string& tenant, EventKind kind, Result<T> result,
                              const std::string& detail, Stopwatch::time_point start) {
  const bool logged = log_.enabled(LogLevel::kInfo);  // the line is built only when it is written
  if (!result.ok()) {
    if (logged)
      log_.info(action + " " + tenant + ": refused: " + result.error().message() + " (" + millisSince(start) + ")");
    events_.publish(EventKind::kRefused, tenant, action + ": " + result.error().message());
    return result;
  }
  if (logged)
    log_.info(action + " " + tenant + ": ok" + (detail.empty() ? "" : ", " + detail) + " (" + millisSince(start) + ")");
  events_.publish(kind, tenant, detail);
  return result;
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
    return decision.answer;
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
      return decision.answer;
    }
    adopting = true;
    // Narrower than the shared pool: it holds those CPUs; otherwise it runs shared. A pod outside
    // kubelet's tree holds none: its containers are brought onto the shared pool.
    const CpuSet exclusive = pod.outsideKubeletTree || from->shared().isSubsetOf(running) ? CpuSet() : running;
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdoptContainer(from, pod, container, exclusive));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    if (!exclusive.empty()) return ContainerPlacement{exclusive, exclusive, {}, true};
    const StatePtr now = writer.current();
    return ContainerPlacement{exclusive, now->shared(), {}, true};
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
    ContainerPlacement placed = decision.answer;
    if (const StatePtr now = writer.current(); placed.exclusive.empty()) placed.cpus = now->shared();
    return placed;
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
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kHoldFreedCpus));
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
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kHoldFreedCpus));
    return true;
  }();
  if (result.ok() && !*result) {
    log_.info("release " + tenant + ": kept, " + describeGuard(guard));
    return false;
  }
  return finish("release", tenant, EventKind::kReleased, std::move(result), "", start);
}

Result<VmCpuPlacement> NodeManager::admitVm(const VmSpec& vm) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(vm.uuid);
  Result<VmCpuPlacement> result = [&]() -> Result<VmCpuPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideAdmitVm(writer.current(), vm));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    return decision.answer;
  }();
  const std::string detail = result.ok() ? describeVm(*result) : "";
  return finish("admit", tenant, EventKind::kAdmitted, std::move(result), detail, start);
}

Result<VmCpuPlacement> NodeManager::reserveVm(const VmSpec& vm) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(vm.uuid);
  Result<VmCpuPlacement> result = [&]() -> Result<VmCpuPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideReserveVm(writer.current(), vm));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    return decision.answer;
  }();
  const std::string detail = result.ok() ? describeVm(*result) : "";
  return finish("reserve", tenant, EventKind::kReserved, std::move(result), detail, start);
}

Result<VmCpuPlacement> NodeManager::resizeVm(const VmSpec& vm) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(vm.uuid);
  Result<VmCpuPlacement> result = [&]() -> Result<VmCpuPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideResizeVm(writer.current(), vm));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kHoldFreedCpus));
    return decision.answer;
  }();
  const std::string detail = result.ok() ? describeVm(*result) : "";
  return finish("resize", tenant, EventKind::kResized, std::move(result), detail, start);
}

Result<std::pair<CgroupPath, int>> NodeManager::vmStarted(const std::string& uuid, int qemuPid) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(uuid);
  Result<std::pair<CgroupPath, int>> result = [&]() -> Result<std::pair<CgroupPath, int>> {
    VRI_TRY(checkNotHalted());
    VRI_ASSIGN_OR_RETURN(CgroupPath scope, sync_.findVmScope(qemuPid));
    Ledger::Writer writer(ledger_);
    const StatePtr now = writer.current();
    const VmRecord* vm = now->vm(uuid);
    if (vm == nullptr) return Error::notFound("uuid: no VM " + uuid + " was admitted");
    if (vm->defined) return Error::failedPrecondition("VM " + uuid + " is only reserved; admit it before it starts");
    const Decision<bool> decision = ledger_.decideVmScopes(writer.current(), {{uuid, scope}});
    WriteStats stats;
    int& writes = stats.writes;
    if (decision.changes()) {
      VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo, &stats));
      // The VM runs placed already: a partition that cannot be written is left to reconcile.
      const StatePtr placed = writer.current();
      const Result<int> partition = sync_.writeMachinePartition(writer, *placed);
      if (partition.ok()) {
        writes += *partition;
      } else {
        log_.warning("started " + tenant + ": " + partition.error().message() + "; reconcile repairs it");
      }
    } else {
      // Known already (a reconcile found it first): its own cgroups are written again all the same.
      LedgerDelta own;
      own.vms.insert(uuid);
      VRI_ASSIGN_OR_RETURN(writes, sync_.write(writer, writer.current(), writer.current(), own));
    }
    return std::pair{scope, writes};
  }();
  if (!result.ok()) {
    log_.warning("started " + tenant + ": " + result.error().message() + " (" + millisSince(start) + ")");
    events_.publish(EventKind::kRefused, tenant, "started: " + result.error().message());
    return result;
  }
  const std::string detail = "scope " + result->first.str() + ", " + std::to_string(result->second) + " cgroup writes";
  return finish("started", tenant, EventKind::kStarted, std::move(result), detail, start);
}

Result<void> NodeManager::releaseVm(const std::string& uuid) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(uuid);
  Result<bool> result = [&]() -> Result<bool> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideReleaseVm(writer.current(), uuid));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kHoldFreedCpus));
    return true;
  }();
  return asVoid(finish("release", tenant, EventKind::kReleased, std::move(result), "", start));
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
    VRI_TRY(carryOut(writer, *decision, tenant, OnWriteFailure::kHoldFreedCpus));
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
