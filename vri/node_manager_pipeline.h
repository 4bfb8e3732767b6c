// The decision pipeline's steps, shared by the files that define NodeManager's
// decisions (node_manager.cc: pods, reconcile; node_manager_vms.cc: VMs):
// carry a decision out, undo it, and the one log line and event that finish it.
// Included by those files only.
#pragma once

#include <cstdio>

#include "vri/node_manager.h"

namespace vri::pipeline {

using Stopwatch = std::chrono::steady_clock;  // how long a decision took, for the log

inline std::string millisSince(Stopwatch::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(Stopwatch::now() - start).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

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

inline Result<void> asVoid(const Result<bool>& done) {
  if (!done.ok()) return done.error();
  return {};
}

}  // namespace vri::pipeline

namespace vri {

template <typename T>
Result<void> NodeManager::carryOut(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                                   OnWriteFailure onFailure, WriteStats* stats, CommitPoint commitPoint) {
  if (!decision.changes()) return {};
  if (commitPoint == CommitPoint::kBeforeWrites)
    VRI_TRY(writer.commit(decision.delta, *decision.after).context("commit"));
  const auto writing = pipeline::Stopwatch::now();
  auto written = sync_.write(writer, decision.before, decision.after, decision.delta);
  if (stats != nullptr)
    stats->took = std::chrono::duration_cast<std::chrono::microseconds>(pipeline::Stopwatch::now() - writing);
  if (commitPoint == CommitPoint::kAfterWrites) {
    if (auto committed = writer.commit(decision.delta, *decision.after); !committed.ok()) {
      restoreCgroups(writer, decision, tenant, "a failed commit");  // not taken: as for an undo
      return std::move(committed).context("commit").error();
    }
  }
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
    retryWrites();
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
  restoreCgroups(writer, decision, tenant, "a failed write");
  return Error::internal("writing the cgroups failed, nothing was changed: " + cause.message());
}

template <typename T>
void NodeManager::restoreCgroups(Ledger::Writer& writer, const Decision<T>& decision, const std::string& tenant,
                                 const char* after) {
  if (auto restored = sync_.write(writer, decision.after, decision.before, decision.delta); !restored.ok()) {
    log_.error(tenant + ": restoring the cgroups after " + after + ": " + restored.error().message() +
               "; a reconcile follows");
    retryWrites();
  }
}

template <typename T>
Result<T> NodeManager::finish(const std::string& action, const std::string& tenant, EventKind kind, Result<T> result,
                              const std::string& detail, pipeline::Stopwatch::time_point start) {
  const bool logged = log_.enabled(LogLevel::kInfo);  // the line is built only when it is written
  if (!result.ok()) {
    if (logged)
      log_.info(action + " " + tenant + ": refused: " + result.error().message() + " (" + pipeline::millisSince(start) +
                ")");
    events_.publish(EventKind::kRefused, tenant, action + ": " + result.error().message());
    return result;
  }
  if (logged)
    log_.info(action + " " + tenant + ": ok" + (detail.empty() ? "" : ", " + detail) + " (" +
              pipeline::millisSince(start) + ")");
  events_.publish(kind, tenant, detail);
  return result;
}

}  // namespace vri
