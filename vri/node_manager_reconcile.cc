// NodeManager's start-up, reconcile and the retry of writes that failed, and what it shows rather
// than decides (capacity, the tree). A reconcile takes the writer as a decision does; the release of
// tenants gone from the node goes through the decision pipeline (node_manager.cc).
#include "accounting/ledger_validation.h"
#include "vri/elapsed_text.h"
#include "vri/node_manager.h"

namespace vri {

// ---- Views.

CapacityBooks NodeManager::capacity() const {
  const NodeFacts node = facts();
  const StatePtr now = state();
  return capacityBooks(*now,
                       {node.allocatable, ledger_.config()->sharedVcpuMilli, ledger_.config()->vmMemoryOverheadBytes});
}

Result<TreeView> NodeManager::tree(bool compareKernel) {
  if (!compareKernel) {
    const StatePtr now = state();
    return sync_.view(*now, false);
  }
  Ledger::Writer writer(ledger_);
  const StatePtr now = writer.current();
  return sync_.view(*now, true);
}

// ---- Start-up, reconcile and retries.

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
  Result<ReconcileReport> report = reconcile(false);
  // systemd stalled (a daemon-reload storm, an upgrade) or the kernel busy: the ledger was read and
  // checked, only its writes did not land. Exiting would leave the node without vrid, its hooks and
  // the shim refused, for as long as the stall lasts; serving, vrid answers (a decision that needs
  // the stalled writer is refused and undone, as at any time) and the retry writes the tree as soon
  // as it can.
  if (!report.ok() &&
      (report.error().code() == ErrorCode::kDeadlineExceeded || report.error().code() == ErrorCode::kUnavailable)) {
    log_.error("start-up: the tree could not be written yet (" + report.error().message() +
               "); serving, and writing it again every retry interval until it lands");
    retry_.writesFailed();
    return ReconcileReport{};
  }
  return report;
}

Result<ReconcileReport> NodeManager::reconcile(bool dryRun) {
  Ledger::Writer writer(ledger_);
  return reconcileLocked(writer, dryRun);
}

Result<ReconcileReport> NodeManager::reconcileLocked(Ledger::Writer& writer, bool dryRun) {
  // kubelet's now: the cgroups VRI would write back are its to write.
  if (handedBack()) return checkNotHalted().error();
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
    std::vector<std::string> unrepaired;
    for (const Drift& d : synced.drift) {
      report.drift.push_back(d.describe());
      if (d.verifiedOnly) unrepaired.push_back(report.drift.back());
    }
    if (!dryRun && unrepaired != unrepaired_) {
      for (const std::string& line : unrepaired) log_.warning("reconcile: " + line);
      unrepaired_ = std::move(unrepaired);
    }
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
      retry_.writesLanded();
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

void NodeManager::retryOnce() {
  Ledger::Writer writer(ledger_);
  if (!halted()) {
    (void)reconcileLocked(writer, false);  // logs and publishes its own outcome
    return;
  }
  if (writer.reload().ok() && reconcileLocked(writer, false).ok()) {
    retry_.setHalted(false);
    log_.info("ledger reloaded from the store and reconciled; taking decisions again");
  }
}

}  // namespace vri
