// NodeManager::applyPolicy: a new placement policy as one transaction against the ledger and the
// cgroups. The order makes a kill at any point safe: the records and the policy's meta are committed
// together, before the cgroups are written, so a restart finds either the old policy and placements
// (and its reconcile writes them back) or the new ones (and writes those).
#include "vri/applied_policy.h"
#include "vri/node_manager.h"

namespace vri {

namespace {

// Every record of `to`, and the deletion of those of `from` it lacks; with `meta`.
LedgerChange recordsOf(const LedgerState& to, const LedgerState& from, std::map<std::string, std::string> meta) {
  LedgerChange change;
  for (const auto& [uid, pod] : to.pods) change.putPods.push_back(pod);
  for (const auto& [uuid, vm] : to.vms) change.putVms.push_back(vm);
  for (const auto& [uid, pod] : from.pods)
    if (to.pod(uid) == nullptr) change.deletePods.push_back(uid);
  for (const auto& [uuid, vm] : from.vms)
    if (to.vm(uuid) == nullptr) change.deleteVms.push_back(uuid);
  change.meta = std::move(meta);
  return change;
}

bool hugepageBacked(const ContainerSpec& spec) {
  for (const auto& [size, bytes] : spec.hugepageLimits)
    if (bytes > 0) return true;
  return false;
}

std::string describeMove(const TenantChange& change) {
  std::string out = "CPUs " + (change.cpusBefore.empty() ? std::string("shared") : change.cpusBefore.format()) +
                    " -> " + (change.cpusAfter.empty() ? std::string("shared") : change.cpusAfter.format());
  if (change.memsBefore != change.memsAfter)
    out += ", memory on nodes " + (change.memsBefore.empty() ? std::string("any") : change.memsBefore.format()) +
           " -> " + (change.memsAfter.empty() ? std::string("any") : change.memsAfter.format());
  return out + " (" + change.reason + ")";
}

}  // namespace

Result<uint64_t> NodeManager::moveBoundMemory(const Ledger::Writer& writer, const LedgerState& state,
                                              const std::vector<const TenantChange*>& moving, bool forward,
                                              uint64_t bytesPerSecond) {
  uint64_t bytes = 0;
  const CgroupSync::MemoryMover mover{*pageMigration_, bytesPerSecond, *options_.clock, sleepUntil_};
  for (const TenantChange* each : moving) {
    const TenantName tenant = parseTenant(each->tenant);
    const PodRecord* pod = state.pod(tenant.podUid);
    if (pod == nullptr) continue;
    const CpuSet& to = forward ? each->memsAfter : each->memsBefore;
    VRI_ASSIGN_OR_RETURN(const uint64_t moved,
                         sync_.moveContainerMemory(writer, *pod, tenant.name, to, mover).context(each->tenant));
    log_.info("policy change: " + each->tenant + ": " + std::to_string(moved >> 10) + " KiB of memory moved to node " +
              to.format() + " at " + std::to_string(bytesPerSecond >> 20) + " MiB/s");
    bytes += moved;
  }
  return bytes;
}

Result<ConfigChangePlan> NodeManager::applyPolicy(const PolicyChange& change) {
  VRI_TRY(checkNotHalted());
  Ledger::Writer writer(ledger_);
  if (retry_.writesPending())
    return Error::failedPrecondition(
        "cgroup writes of an earlier decision wait to land (vrictl reconcile); apply the policy once they have");
  const StatePtr before = writer.current();
  VRI_ASSIGN_OR_RETURN(ConfigChangePlan plan, planConfigChange(*before, ledger_.sharedTopology(), change.ledger));
  std::string broken;
  std::vector<const TenantChange*> moving;  // containers whose bound memory moves
  for (const TenantChange& each : plan.changes) {
    const auto breaks = [&](const std::string& why) {
      broken += (broken.empty() ? "" : "; ") + each.name + " (" + each.tenant + "): " + why;
    };
    if (each.verdict == TenantChange::Verdict::kBreaks) {
      breaks(each.reason);
      continue;
    }
    if (each.memsBefore.empty() || each.memsAfter == each.memsBefore) continue;
    const std::string bound = "its memory is bound to NUMA nodes " + each.memsBefore.format() +
                              " and would have to move to " +
                              (each.memsAfter.empty() ? std::string("any node") : each.memsAfter.format());
    const TenantName tenant = parseTenant(each.tenant);
    if (tenant.kind != TenantName::Kind::kContainer) {
      breaks(bound + ", and a VM's memory is not moved by a policy change (its numatune is libvirt's)");
    } else if (hugepageBacked(before->pod(tenant.podUid)->containers.at(tenant.name).spec)) {
      breaks(bound + ", and it is backed by hugepages, which are not moved (each node's pool is its own)");
    } else if (change.memoryMoveBytesPerSecond == 0) {
      breaks(bound + ", and memory_move_rate is 0");
    } else {
      moving.push_back(&each);
    }
  }
  if (!broken.empty())
    return Error::failedPrecondition("the new placement policy cannot hold every tenant, nothing was changed: " +
                                     broken);

  // The new state keeps what is known at run time only: where VMs' cgroups are.
  const StatePtr after =
      std::make_shared<const LedgerState>(Ledger::withRuntimeKnowledge(*plan.after, *before, change.ledger));
  const std::shared_ptr<const LedgerConfig> previous = ledger_.config();
  const NodeAllocatable previousAllocatable = sync_.allocatable();
  const auto [policyKey, policyNow] = Ledger::policyMeta(*previous);
  const auto [policyKeyAfter, policyAfter] = Ledger::policyMeta(change.ledger);

  VRI_TRY(writer
              .commitChange(
                  recordsOf(*after, *before, {{kAppliedPolicyMeta, change.appliedText}, {policyKeyAfter, policyAfter}}))
              .context("commit"));
  sync_.setPolicy(writer, change.allocatable, change.ledger.sharedVcpuMilli);
  // Memory first, at its rate: the reconcile then narrows cpuset.mems over pages already moved.
  const Clock::TimePoint memoryStarted = options_.clock->now();
  Result<uint64_t> memoryMoved = moveBoundMemory(writer, *before, moving, true, change.memoryMoveBytesPerSecond);
  Result<SyncResult> written =
      memoryMoved.ok() ? sync_.reconcile(writer, *after) : Result<SyncResult>(memoryMoved.error());
  if (!written.ok()) {
    if (!moving.empty()) {
      if (auto back = moveBoundMemory(writer, *before, moving, false, change.memoryMoveBytesPerSecond); !back.ok())
        log_.error("policy change: moving memory back: " + back.error().message() + "; the reconcile moves the rest");
    }
    sync_.setPolicy(writer, previousAllocatable, previous->sharedVcpuMilli);
    const LedgerChange back =
        recordsOf(*before, *after, {{kAppliedPolicyMeta, change.previousText}, {policyKey, policyNow}});
    if (auto reverted = writer.commitChange(back); !reverted.ok()) {
      // The store holds a policy nobody runs: as for an undo that could not be committed.
      retry_.setHalted(true);
      log_.error("policy change: the undo of a failed cgroup write could not be committed (" +
                 reverted.error().message() + "); decisions stop until vrid restarts");
      events_.publish(EventKind::kHalted, "", "policy change: " + reverted.error().message());
      return Error(ErrorCode::kUnavailable,
                   "writing the cgroups failed (" + written.error().message() +
                       ") and undoing the policy change could not be committed: " + reverted.error().message());
    }
    if (auto restored = sync_.reconcile(writer, *before); !restored.ok()) {
      log_.error("policy change: restoring the cgroups: " + restored.error().message() + "; a reconcile follows");
      retry_.writesFailed();
    }
    return Error::internal("writing the cgroups failed, the policy was not changed: " + written.error().message());
  }
  writer.reconfigure(change.ledger, after);
  {
    MutexLock lock(factsMutex_);
    facts_.allocatable = change.allocatable;
    facts_.strictCpuReservation = change.strictCpuReservation;
  }
  published(*before, *after);
  for (const TenantChange& each : plan.changes) {
    log_.info("policy change: " + each.tenant + " (" + each.name + ") " + describeMove(each));
    events_.publish(EventKind::kMoved, each.tenant, "policy change: " + describeMove(each));
  }
  std::string summary = std::to_string(plan.changes.size()) + " moved, " + std::to_string(plan.stays) +
                        " kept; reserved CPUs " + plan.reservedAfter.format() + ", shared pool " +
                        plan.sharedAfter.format();
  if (!moving.empty())
    summary +=
        "; " + std::to_string(*memoryMoved >> 20) + " MiB of memory moved in " +
        std::to_string(
            std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->now() - memoryStarted).count()) +
        " ms";
  log_.info("policy change applied: " + summary);
  events_.publish(EventKind::kPolicyApplied, "", summary);
  return plan;
}

}  // namespace vri
