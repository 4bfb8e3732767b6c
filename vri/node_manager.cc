#include "vri/node_manager.h"

#include <chrono>
#include <cstdio>

#include "accounting/ledger_validation.h"

namespace vri {

std::string podTenant(const std::string& uid) { return "pod/" + uid; }
std::string containerTenant(const std::string& uid, const std::string& name) { return "pod/" + uid + "/" + name; }
std::string vmTenant(const std::string& uuid) { return "vm/" + uuid; }

namespace {

std::string millisSince(std::chrono::steady_clock::time_point start) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
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
  std::string out = "vcpus";
  for (int cpu : p.vcpuCpus) out += cpu == VmCpuPlacement::kShared ? " shared" : " " + std::to_string(cpu);
  if (!p.exclusive.empty()) out += ", exclusive " + p.exclusive.format();
  if (!p.mems.empty()) out += ", mems " + p.mems.format();
  return out;
}

}  // namespace

bool NodeManager::sharedPoolMoved() const {
  std::lock_guard lock(appliedMutex_);
  return ledger_.sharedCpus() != appliedShared_;
}

Result<int> NodeManager::writeCgroups() {
  // Decisions that wait together share one apply: an apply whose snapshot was
  // taken after this decision committed covers it.
  const uint64_t mine = ++decisions_;
  std::lock_guard write_lock(writeMutex_);
  if (appliedThrough_ >= mine) return 0;
  const uint64_t covering = decisions_.load();
  VRI_ASSIGN_OR_RETURN(SyncResult written, sync_.apply(ledger_));
  appliedThrough_ = covering;
  std::lock_guard lock(appliedMutex_);
  if (written.shared != appliedShared_) {
    events_.publish(v1::Event::SHARED_POOL_CHANGED, "", appliedShared_.format() + " -> " + written.shared.format());
    appliedShared_ = written.shared;
  }
  return static_cast<int>(written.operations.size());
}

template <typename T>
Result<T> NodeManager::run(const std::string& action, const std::string& tenant, v1::Event::Kind kind,
                           const std::function<Result<T>()>& decide,
                           const std::function<std::string(const T&)>& describe, const std::function<void()>& undo,
                           bool always) {
  const auto start = std::chrono::steady_clock::now();
  Result<T> result = decide();
  if (!result.ok()) {
    log_.info(action + " " + tenant + ": refused: " + result.error().message() + " (" + millisSince(start) + ")");
    events_.publish(v1::Event::REFUSED, tenant, action + ": " + result.error().message());
    return result;
  }
  if (always || facts_.ownsEverything || sharedPoolMoved()) {
    auto written = writeCgroups();
    if (!written.ok() && undo) {
      undo();
      auto restored = writeCgroups();
      Error error = Error::internal("writing the cgroups failed, nothing was changed: " + written.error().message());
      if (!restored.ok())
        log_.error("restoring the cgroups after a failed " + action + ": " + restored.error().message());
      log_.error(action + " " + tenant + ": undone: " + error.message() + " (" + millisSince(start) + ")");
      events_.publish(v1::Event::REFUSED, tenant, action + ": " + error.message());
      return error;
    }
    if (!written.ok()) {
      log_.error(action + " " + tenant + ": decided, but writing the cgroups failed (the next reconcile retries): " +
                 written.error().message());
      events_.publish(v1::Event::RECONCILE_FAILED, tenant, written.error().message());
    }
  }
  const std::string detail = describe(*result);
  log_.info(action + " " + tenant + ": ok" + (detail.empty() ? "" : ", " + detail) + " (" + millisSince(start) + ")");
  events_.publish(kind, tenant, detail);
  return result;
}

Result<ContainerPlacement> NodeManager::admitContainer(const PodSpec& pod, const ContainerSpec& container) {
  const auto known = ledger_.findPod(pod.uid);
  const bool existed = known && known->containers.count(container.name);
  return run<ContainerPlacement>(
      "admit", containerTenant(pod.uid, container.name), v1::Event::ADMITTED,
      [&] { return ledger_.admitContainer(pod, container); }, describeContainer,
      existed ? std::function<void()>() : [&] { (void)ledger_.releaseContainer(pod.uid, container.name); }, false);
}

Result<std::vector<ContainerPlacement>> NodeManager::admitPod(const PodSpec& pod,
                                                              const std::vector<ContainerSpec>& containers) {
  const auto known = ledger_.findPod(pod.uid);
  std::vector<std::string> fresh;
  for (const ContainerSpec& c : containers) {
    if (!known || !known->containers.count(c.name)) fresh.push_back(c.name);
  }
  return run<std::vector<ContainerPlacement>>(
      "admit", podTenant(pod.uid), v1::Event::ADMITTED, [&] { return ledger_.admitPod(pod, containers); },
      [](const std::vector<ContainerPlacement>& placed) {
        std::string out;
        for (const auto& p : placed) out += (out.empty() ? "" : "; ") + describeContainer(p);
        return out;
      },
      [&] {
        for (const std::string& name : fresh) (void)ledger_.releaseContainer(pod.uid, name);
      },
      false);
}

Result<ContainerPlacement> NodeManager::resizeContainer(const std::string& podUid, const ContainerSpec& container) {
  return run<ContainerPlacement>(
      "resize", containerTenant(podUid, container.name), v1::Event::RESIZED,
      [&] { return ledger_.resizeContainer(podUid, container); }, describeContainer, {}, false);
}

Result<void> NodeManager::releaseContainer(const std::string& podUid, const std::string& name) {
  auto done = run<bool>(
      "release", containerTenant(podUid, name), v1::Event::RELEASED,
      [&]() -> Result<bool> {
        VRI_TRY(ledger_.releaseContainer(podUid, name));
        return true;
      },
      [](const bool&) { return std::string(); }, {}, false);
  if (!done.ok()) return done.error();
  return {};
}

Result<void> NodeManager::releasePod(const std::string& podUid) {
  auto done = run<bool>(
      "release", podTenant(podUid), v1::Event::RELEASED,
      [&]() -> Result<bool> {
        VRI_TRY(ledger_.releasePod(podUid));
        return true;
      },
      [](const bool&) { return std::string(); }, {}, false);
  if (!done.ok()) return done.error();
  return {};
}

Result<VmCpuPlacement> NodeManager::admitVm(const VmSpec& vm) {
  const bool existed = ledger_.findVm(vm.uuid).has_value();
  return run<VmCpuPlacement>(
      "admit", vmTenant(vm.uuid), v1::Event::ADMITTED, [&] { return ledger_.admitVm(vm); }, describeVm,
      existed ? std::function<void()>() : [&] { (void)ledger_.releaseVm(vm.uuid); }, false);
}

Result<VmCpuPlacement> NodeManager::reserveVm(const VmSpec& vm) {
  const bool existed = ledger_.findVm(vm.uuid).has_value();
  return run<VmCpuPlacement>(
      "reserve", vmTenant(vm.uuid), v1::Event::RESERVED, [&] { return ledger_.reserveVm(vm); }, describeVm,
      existed ? std::function<void()>() : [&] { (void)ledger_.releaseVm(vm.uuid); }, false);
}

Result<VmCpuPlacement> NodeManager::resizeVm(const VmSpec& vm) {
  return run<VmCpuPlacement>(
      "resize", vmTenant(vm.uuid), v1::Event::RESIZED, [&] { return ledger_.resizeVm(vm); }, describeVm, {},
      sync_.vmScope(vm.uuid).has_value());
}

Result<std::pair<CgroupPath, int>> NodeManager::vmStarted(const std::string& uuid, int qemuPid) {
  const auto start = std::chrono::steady_clock::now();
  const auto vm = ledger_.findVm(uuid);
  Result<std::pair<CgroupPath, int>> result = [&]() -> Result<std::pair<CgroupPath, int>> {
    if (!vm) return Error::notFound("uuid: no VM " + uuid + " was admitted");
    if (vm->defined) return Error::failedPrecondition("VM " + uuid + " is only reserved; admit it before it starts");
    VRI_ASSIGN_OR_RETURN(CgroupPath scope, sync_.vmStarted(uuid, qemuPid));
    VRI_ASSIGN_OR_RETURN(int writes, writeCgroups());
    return std::pair{scope, writes};
  }();
  const std::string tenant = vmTenant(uuid);
  if (!result.ok()) {
    log_.warning("started " + tenant + ": " + result.error().message() + " (" + millisSince(start) + ")");
    events_.publish(v1::Event::REFUSED, tenant, "started: " + result.error().message());
    return result;
  }
  const std::string detail = "scope " + result->first.str() + ", " + std::to_string(result->second) + " cgroup writes";
  log_.info("started " + tenant + ": ok, " + detail + " (" + millisSince(start) + ")");
  events_.publish(v1::Event::STARTED, tenant, detail);
  return result;
}

Result<void> NodeManager::releaseVm(const std::string& uuid) {
  auto done = run<bool>(
      "release", vmTenant(uuid), v1::Event::RELEASED,
      [&]() -> Result<bool> {
        VRI_TRY(ledger_.releaseVm(uuid));
        sync_.forgetVm(uuid);
        return true;
      },
      [](const bool&) { return std::string(); }, {}, false);
  if (!done.ok()) return done.error();
  return {};
}

Result<ReconcileReport> NodeManager::startUp() {
  VRI_ASSIGN_OR_RETURN(NodeScan scan, sync_.scan());
  const ValidationReport validation = validateLedger(ledger_, scan);
  for (const std::string& line : validation.repaired) {
    log_.info("start-up: " + line);
    events_.publish(line.find("adopted") != std::string::npos ? v1::Event::ADOPTED : v1::Event::RELEASED, "", line);
  }
  for (const std::string& line : validation.unresolved) log_.warning("start-up: " + line);
  for (const std::string& line : ledger_.loadProblems()) log_.warning("ledger: " + line);
  return reconcile(false);
}

Result<ReconcileReport> NodeManager::reconcile(bool dryRun) {
  const auto start = std::chrono::steady_clock::now();
  auto attempt = [&]() -> Result<ReconcileReport> {
    VRI_ASSIGN_OR_RETURN(NodeScan scan, sync_.scan());
    VRI_ASSIGN_OR_RETURN(SyncResult synced, sync_.apply(ledger_, true, dryRun));
    ReconcileReport report;
    for (const Drift& d : synced.drift) report.drift.push_back(d.describe());
    for (const CgroupOp& op : synced.operations) report.operations.push_back(op.describe());
    report.notes = std::move(scan.notes);
    if (!dryRun) {
      std::lock_guard lock(appliedMutex_);
      appliedShared_ = synced.shared;
    }
    return report;
  };
  auto report = attempt();
  if (!report.ok()) {
    log_.error("reconcile: " + report.error().message());
    events_.publish(v1::Event::RECONCILE_FAILED, "", report.error().message());
    return report;
  }
  if (!dryRun && !report->operations.empty()) {
    std::string detail = std::to_string(report->operations.size()) + " cgroup operations for " +
                         std::to_string(report->drift.size()) + " differences";
    if (!report->drift.empty()) detail += ", first: " + report->drift.front();
    log_.info("reconcile: " + detail + " (" + millisSince(start) + ")");
    events_.publish(v1::Event::DRIFT_REPAIRED, "", detail);
  } else {
    log_.debug("reconcile: nothing to repair (" + millisSince(start) + ")");
  }
  return report;
}

}  // namespace vri
