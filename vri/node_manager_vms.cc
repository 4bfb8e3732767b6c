// NodeManager's decisions about VMs: admit, reserve, resize, start, move, release.
#include "vri/node_manager_pipeline.h"

namespace vri {

using pipeline::asVoid;
using pipeline::describeVm;
using pipeline::millisSince;
using pipeline::Stopwatch;

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
    VRI_TRY(carryOutRelease(writer, decision, tenant));
    return true;
  }();
  return asVoid(finish("release", tenant, EventKind::kReleased, std::move(result), "", start));
}

Result<VmCpuPlacement> NodeManager::moveVm(const std::string& uuid, const std::vector<VmThreadMove>& moves) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(uuid);
  Result<VmCpuPlacement> result = [&]() -> Result<VmCpuPlacement> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideMoveVm(writer.current(), uuid, moves));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    return decision.answer;
  }();
  std::string detail;
  for (const VmThreadMove& move : moves) {
    detail += (detail.empty() ? "" : ", ") + move.name() + " -> " +
              (move.cpu ? "CPU " + std::to_string(*move.cpu) : std::string("the shared pool"));
  }
  return finish("move", tenant, EventKind::kMoved, std::move(result), detail, start);
}

Result<VcpusOnline> NodeManager::vcpusOnline(const std::string& uuid, const std::vector<int>& online) {
  const auto start = Stopwatch::now();
  const std::string tenant = vmTenant(uuid);
  Result<VcpusOnline> result = [&]() -> Result<VcpusOnline> {
    VRI_TRY(checkNotHalted());
    Ledger::Writer writer(ledger_);
    VRI_ASSIGN_OR_RETURN(auto decision, ledger_.decideVcpusOnline(writer.current(), uuid, online));
    VRI_TRY(carryOut(writer, decision, tenant, OnWriteFailure::kUndo));
    return decision.answer;
  }();
  std::string detail;
  if (result.ok()) {
    CpuSet ids;
    for (int id : online) ids.add(id);
    detail = "vCPUs online " + ids.format() + ": " + describeVm(result->placement);
    for (const std::string& note : result->notes) detail += "; " + note;
  }
  return finish("vcpus", tenant, EventKind::kResized, std::move(result), detail, start);
}

}  // namespace vri
