// NodeManager: every decision from request to answer, through one pipeline (decision()): pods, VMs, and
// the release of tenants gone from the node. Start-up, reconcile and the retries: node_manager_reconcile.cc.
#include "vri/node_manager.h"

#include <thread>
#include <type_traits>

#include "base/quote.h"
#include "vri/elapsed_text.h"

namespace vri {

namespace {

inline std::string describeContainer(const ContainerPlacement& p) {
  std::string out = "cpus " + p.cpus.format() + (p.exclusive.empty() ? " (shared)" : " (exclusive)");
  if (!p.mems.empty()) out += " mems " + p.mems.format();
  return out;
}

inline std::string describeVm(const VmCpuPlacement& p) {
  std::string out = "vcpus";  // id:cpu
  for (const auto& [vcpu, cpu] : p.vcpuCpus)
    out += " " + std::to_string(vcpu) + ":" + (cpu == VmCpuPlacement::kShared ? "shared" : std::to_string(cpu));
  if (!p.exclusive.empty()) out += ", exclusive " + p.exclusive.format();
  if (!p.mems.empty()) out += ", mems " + p.mems.format();
  return out;
}

// Why a guarded release left the tenant alone, for the log.
std::string describeGuard(const ReleaseGuard& guard) {
  return guard.onlyUnbound ? "it has a runtime id or is gone"
                           : "runtime id " + guard.runtimeId + " is not the one it holds (or it is gone)";
}

// What a reply makes: its value, whether or not it can fail.
template <typename T>
struct ResultValue {
  using type = T;
};
template <typename T>
struct ResultValue<Result<T>> {
  using type = T;
};

// The parts of a decision most kinds leave as they are.
constexpr auto kAsDecided = [](Ledger::Writer&, auto answer) { return answer; };
constexpr auto kNoDetail = [](const auto&) { return std::string(); };
constexpr auto kNeverQuiet = [](const auto&) { return false; };

}  // namespace

NodeManager::NodeManager(Ledger& ledger, CgroupSync& sync, EventHub& events, Logger& log, NodeFacts facts,
                         NodeManagerOptions options)
    : ledger_(ledger),
      sync_(sync),
      events_(events),
      log_(log),
      facts_(std::move(facts)),
      options_(std::move(options)),
      ownPageMigration_(options_.pageMigration == nullptr ? kernelPageMigration() : nullptr),
      pageMigration_(options_.pageMigration != nullptr ? options_.pageMigration : ownPageMigration_.get()),
      sleepUntil_(options_.sleepUntil ? options_.sleepUntil
                                      : [](Clock::TimePoint when) { std::this_thread::sleep_until(when); }),
      vanished_(options_.releaseGrace),
      retry_(options_.retryInterval, *options_.clock, [this] { retryOnce(); }) {}

NodeManager::~NodeManager() = default;

// ---- The pipeline every decision takes.

template <typename Decide, typename Reply, typename Describe, typename Quiet>
auto NodeManager::decision(const DecisionRule& rule, const std::string& tenant, Decide decide, Reply reply,
                           Describe describe, Quiet quiet, WriteStats* stats) {
  using Decided = typename std::invoke_result_t<Decide, const StatePtr&>::value_type;  // Decision<T>
  using Answer = typename ResultValue<std::invoke_result_t<Reply, Ledger::Writer&, decltype(Decided::answer)>>::type;
  const auto start = Stopwatch::now();
  Result<Answer> result = [&]() -> Result<Answer> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(Decided decided, decide(writer.current()));
    VRI_TRY(carryOut(writer, decided, tenant, rule, stats));
    return reply(writer, std::move(decided.answer));
  }();
  if (result.ok() && quiet(*result)) return result;
  const std::string detail = result.ok() ? describe(*result) : std::string();
  return finish(rule, tenant, std::move(result), detail, start);
}

template <typename T>
Result<void> NodeManager::carryOut(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                                   const DecisionRule& rule, WriteStats* stats) {
  if (!decision.changes()) return {};
  if (rule.commitPoint == CommitPoint::kBeforeWrites)
    VRI_TRY(writer.commit(decision.delta, *decision.after).context("commit"));
  const auto writing = Stopwatch::now();
  auto written = sync_.write(writer, decision.before, decision.after, decision.delta);
  if (stats != nullptr) {
    stats->took = std::chrono::duration_cast<std::chrono::microseconds>(Stopwatch::now() - writing);
    if (written.ok()) stats->writes = *written;
  }
  if (rule.commitPoint == CommitPoint::kAfterWrites) {
    if (auto committed = writer.commit(decision.delta, *decision.after); !committed.ok()) {
      restoreCgroups(writer, decision, tenant, "a failed commit");  // not taken: as for an undo
      return std::move(committed).context("commit").error();
    }
  }
  if (!written.ok() && rule.onFailure == OnWriteFailure::kUndo) return undo(writer, decision, tenant, written.error());
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
    retry_.writesFailed();
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
    retry_.setHalted(true);
    const std::string detail = "the undo of a failed cgroup write could not be committed (" +
                               reverted.error().message() + "); reloading the ledger";
    log_.error(tenant + ": " + detail);
    events_.publish(EventKind::kHalted, tenant, detail);
    if (writer.reload().ok() && reconcileLocked(writer, false).ok()) {
      retry_.setHalted(false);
      log_.info("ledger reloaded from the store and reconciled; taking decisions again");
    } else {
      retry_.wake();  // the retry thread reloads until it can
    }
    return Error(ErrorCode::kUnavailable,
                 "writing the cgroups failed (" + cause.message() +
                     ") and undoing the decision could not be committed: " + reverted.error().message());
  }
  restoreCgroups(writer, decision, tenant, "a failed write");
  return Error::internal("writing the cgroups failed, nothing was changed: " + cause.message());
}

template <typename T>
void NodeManager::restoreCgroups(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                                 const char* after) {
  if (auto restored = sync_.write(writer, decision.after, decision.before, decision.delta); !restored.ok()) {
    log_.error(tenant + ": restoring the cgroups after " + after + ": " + restored.error().message() +
               "; a reconcile follows");
    retry_.writesFailed();
  }
}

template <typename T>
Result<T> NodeManager::finish(const DecisionRule& rule, const std::string& tenant, Result<T> result,
                              const std::string& detail, Stopwatch::time_point start) {
  const std::string action = rule.action;
  const bool logged = log_.enabled(LogLevel::kInfo);  // the line is built only when it is written
  if (!result.ok()) {
    if (rule.refusalIsWarning) {
      log_.warning(action + " " + tenant + ": " + result.error().message() + " (" + millisSince(start) + ")");
    } else if (logged) {
      log_.info(action + " " + tenant + ": refused: " + result.error().message() + " (" + millisSince(start) + ")");
    }
    events_.publish(EventKind::kRefused, tenant, action + ": " + result.error().message());
    return result;
  }
  if (logged)
    log_.info(action + " " + tenant + ": ok" + (detail.empty() ? "" : ", " + detail) + " (" + millisSince(start) + ")");
  events_.publish(rule.event, tenant, detail);
  return result;
}

Result<void> NodeManager::checkNotHalted() const {
  if (handedBack())
    return Error::failedPrecondition(
        "vrid handed this node back to kubelet's CPU manager (vrictl handback): it decides nothing more; stop "
        "vrid and remove VRI (docs/operating.md, \"Handing a node back to kubelet's CPU manager\")");
  if (!halted()) return {};
  return Error(ErrorCode::kUnavailable,
               "vrid takes no decisions: an undo could not be committed and the ledger could not be reloaded; "
               "see vrid's log (a restart reloads it)");
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

// ---- Pods.

Result<ContainerPlacement> NodeManager::admitContainer(const PodSpec& pod, const ContainerSpec& container,
                                                       const std::vector<std::string>& finished, WriteStats* stats) {
  return decision(
      kAdmit, containerTenant(pod.uid, container.name),
      [&](const StatePtr& from) { return ledger_.decideAdmitContainer(from, pod, container, finished); },
      [&](Ledger::Writer& writer, ContainerPlacement placed) { return asWritten(writer.current(), pod.uid, placed); },
      describeContainer, kNeverQuiet, stats);
}

Result<ContainerPlacement> NodeManager::adoptOrAdmitContainer(const PodSpec& pod, const ContainerSpec& container,
                                                              const CpuSet& running) {
  // Which it is shows only under the writer: `rule` is read after the decision.
  DecisionRule rule = kAdmit;
  const auto decide = [&](const StatePtr& from) -> Result<Decision<ContainerPlacement>> {
    const PodRecord* known = from->pod(pod.uid);
    if (known != nullptr && known->containers.count(container.name))
      return ledger_.decideAdmitContainer(from, pod, container, {});
    rule = kAdopt;
    // Narrower than the shared pool: it holds those CPUs; otherwise it runs shared. A pod outside
    // kubelet's tree holds none: its containers are brought onto the shared pool.
    const CpuSet exclusive = pod.outsideKubeletTree || from->shared().isSubsetOf(running) ? CpuSet() : running;
    VRI_ASSIGN_OR_RETURN(auto adopted, ledger_.decideAdoptContainer(from, pod, container, exclusive, {}));
    return Decision<ContainerPlacement>{ContainerPlacement{exclusive, exclusive, {}, true}, adopted.before,
                                        adopted.after, std::move(adopted.delta)};
  };
  return decision(
      rule, containerTenant(pod.uid, container.name), decide,
      [&](Ledger::Writer& writer, ContainerPlacement placed) { return asWritten(writer.current(), pod.uid, placed); },
      describeContainer, kNeverQuiet);
}

Result<bool> NodeManager::bindSandbox(const PodSpec& pod, const std::string& sandboxId) {
  return decision(
      kAdmit, podTenant(pod.uid), [&](const StatePtr& from) { return ledger_.decideBindSandbox(from, pod, sandboxId); },
      kAsDecided, [&](bool) { return sandboxId.empty() ? std::string("recorded") : "sandbox " + sandboxId; },
      [&](bool isNew) { return !isNew && sandboxId.empty(); });  // known already: nothing to say
}

Result<std::vector<ContainerPlacement>> NodeManager::admitPod(const PodSpec& pod,
                                                              const std::vector<ContainerSpec>& containers) {
  return decision(
      kAdmit, podTenant(pod.uid), [&](const StatePtr& from) { return ledger_.decideAdmitPod(from, pod, containers); },
      [&](Ledger::Writer& writer, std::vector<ContainerPlacement> placed) {
        for (ContainerPlacement& p : placed) p = asWritten(writer.current(), pod.uid, p);
        return placed;
      },
      [](const std::vector<ContainerPlacement>& placed) {
        std::string detail;
        for (const auto& p : placed) detail += (detail.empty() ? "" : "; ") + describeContainer(p);
        return detail;
      },
      kNeverQuiet);
}

Result<ContainerPlacement> NodeManager::resizeContainer(const std::string& podUid, const ContainerSpec& container) {
  return decision(
      kResize, containerTenant(podUid, container.name),
      [&](const StatePtr& from) { return ledger_.decideResizeContainer(from, podUid, container); },
      [&](Ledger::Writer& writer, ContainerPlacement placed) { return asWritten(writer.current(), podUid, placed); },
      describeContainer, kNeverQuiet);
}

Result<bool> NodeManager::releaseContainer(const std::string& podUid, const std::string& name,
                                           const ReleaseGuard& guard) {
  const std::string tenant = containerTenant(podUid, name);
  Result<bool> released = decision(
      kRelease, tenant, [&](const StatePtr& from) { return ledger_.decideReleaseContainer(from, podUid, name, guard); },
      kAsDecided, kNoDetail, [](bool done) { return !done; });
  if (released.ok() && !*released) log_.info("release " + tenant + ": kept, " + describeGuard(guard));
  return released;
}

Result<bool> NodeManager::releasePod(const std::string& podUid, const ReleaseGuard& guard) {
  const std::string tenant = podTenant(podUid);
  Result<bool> released = decision(
      kRelease, tenant, [&](const StatePtr& from) { return ledger_.decideReleasePod(from, podUid, guard); }, kAsDecided,
      kNoDetail, [](bool done) { return !done; });
  if (released.ok() && !*released) log_.info("release " + tenant + ": kept, " + describeGuard(guard));
  return released;
}

// ---- VMs.

Result<VmCpuPlacement> NodeManager::admitVm(const VmSpec& vm) {
  return decision(
      kAdmit, vmTenant(vm.uuid), [&](const StatePtr& from) { return ledger_.decideAdmitVm(from, vm); }, kAsDecided,
      describeVm, kNeverQuiet);
}

Result<VmCpuPlacement> NodeManager::reserveVm(const VmSpec& vm) {
  return decision(
      kReserve, vmTenant(vm.uuid), [&](const StatePtr& from) { return ledger_.decideReserveVm(from, vm); }, kAsDecided,
      describeVm, kNeverQuiet);
}

Result<VmCpuPlacement> NodeManager::resizeVm(const VmSpec& vm) {
  return decision(
      kResize, vmTenant(vm.uuid), [&](const StatePtr& from) { return ledger_.decideResizeVm(from, vm); }, kAsDecided,
      describeVm, kNeverQuiet);
}

Result<void> NodeManager::releaseVm(const std::string& uuid) {
  Result<bool> released = decision(
      kRelease, vmTenant(uuid), [&](const StatePtr& from) { return ledger_.decideReleaseVm(from, uuid); }, kAsDecided,
      kNoDetail, kNeverQuiet);
  if (!released.ok()) return released.error();
  return {};
}

Result<VmCpuPlacement> NodeManager::moveVm(const std::string& uuid, const std::vector<VmThreadMove>& moves) {
  return decision(
      kMove, vmTenant(uuid), [&](const StatePtr& from) { return ledger_.decideMoveVm(from, uuid, moves); }, kAsDecided,
      [&](const VmCpuPlacement&) {
        std::string detail;
        for (const VmThreadMove& move : moves) {
          detail += (detail.empty() ? "" : ", ") + move.name() + " -> " +
                    (move.cpu ? "CPU " + std::to_string(*move.cpu) : std::string("the shared pool"));
        }
        return detail;
      },
      kNeverQuiet);
}

Result<VcpusOnline> NodeManager::vcpusOnline(const std::string& uuid, const std::vector<int>& online) {
  return decision(
      kVcpus, vmTenant(uuid), [&](const StatePtr& from) { return ledger_.decideVcpusOnline(from, uuid, online); },
      kAsDecided,
      [&](const VcpusOnline& done) {
        CpuSet ids;
        for (int id : online) ids.add(id);
        std::string detail = "vCPUs online " + ids.format() + ": " + describeVm(done.placement);
        for (const std::string& note : done.notes) detail += "; " + note;
        return detail;
      },
      kNeverQuiet);
}

// No decision: the ledger already holds the container; its cgroup came into being after it was
// admitted (the runtime makes it at the start), so the admission's writes skipped it.
Result<void> NodeManager::containerStarted(const std::string& podUid, const std::string& id, WriteStats* stats) {
  VRI_TRY(checkNotHalted());
  const auto start = Stopwatch::now();
  Ledger::Writer writer(ledger_);
  const StatePtr now = writer.current();
  if (now->pod(podUid) == nullptr) return Error::notFound("pod_uid: no pod " + quoteForMessage(podUid));
  LedgerDelta own;
  own.pods.insert(podUid);
  const Result<int> written = sync_.write(writer, now, now, own);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(Stopwatch::now() - start);
  if (!written.ok()) {
    log_.warning("pod " + podUid + ": started container " + id + ": " + written.error().message() +
                 "; reconcile repairs it");
    return written.error();
  }
  if (stats != nullptr) *stats = WriteStats{*written, took};
  if (*written > 0)
    log_.info("pod " + podUid + ": started container " + id + ": " + std::to_string(*written) + " cgroup writes (" +
              millisSince(start) + ")");
  return {};
}

// A VM's QEMU process started: its scope, found on the cgroupfs before the writer is taken, bound
// to the VM (admitted, not only reserved), then its cgroups written. A start a reconcile found first
// is written again all the same.
Result<std::pair<CgroupPath, int>> NodeManager::vmStarted(const std::string& uuid, int qemuPid) {
  const std::string tenant = vmTenant(uuid);
  const Result<CgroupPath> scope = sync_.findVmScope(qemuPid);
  bool found = false;  // the decision bound the scope (else a reconcile had)
  WriteStats stats;
  const auto decide = [&](const StatePtr& from) -> Result<Decision<bool>> {
    VRI_TRY(scope);
    const VmRecord* vm = from->vm(uuid);
    if (vm == nullptr) return Error::notFound("uuid: no VM " + uuid + " was admitted");
    if (vm->defined) return Error::failedPrecondition("VM " + uuid + " is only reserved; admit it before it starts");
    Decision<bool> bound = ledger_.decideVmScopes(from, {{uuid, *scope}});
    found = bound.changes();
    return bound;
  };
  const auto reply = [&](Ledger::Writer& writer, bool) -> Result<std::pair<CgroupPath, int>> {
    int writes = stats.writes;
    if (found) {
      // The VM runs placed already: a partition that cannot be written is left to reconcile.
      const StatePtr placed = writer.current();
      const Result<int> partition = sync_.writeMachinePartition(writer, *placed);
      if (partition.ok()) {
        writes += *partition;
      } else {
        log_.warning("started " + tenant + ": " + partition.error().message() + "; reconcile repairs it");
      }
    } else {
      LedgerDelta own;
      own.vms.insert(uuid);
      VRI_ASSIGN_OR_RETURN(writes, sync_.write(writer, writer.current(), writer.current(), own));
    }
    return std::pair{*scope, writes};
  };
  return decision(
      kStart, tenant, decide, reply,
      [](const std::pair<CgroupPath, int>& started) {
        return "scope " + started.first.str() + ", " + std::to_string(started.second) + " cgroup writes";
      },
      kNeverQuiet, &stats);
}

Result<void> NodeManager::releaseVanished(Ledger::Writer& writer, const VanishedTenants::Due& due) {
  const std::string why =
      "gone from the node for " + std::to_string(options_.releaseGrace.count()) + " s or more; released";
  const auto released = [&](const std::string& tenant, const Result<Decision<bool>>& decision)
                            VRI_REQUIRES(ledger_.writerMutex()) -> Result<void> {
    if (!decision.ok()) return {};  // gone from the ledger meanwhile
    VRI_TRY(carryOut(writer, *decision, tenant, kRelease));
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

}  // namespace vri
