// A configuration applied while vrid runs: SIGHUP, `vrictl config apply` (ApplyConfig) and
// `systemctl reload vrid` all come here. The options a reload may change take effect at once; the
// placement policy takes effect as one transaction (NodeManager::applyPolicy) or not at all; the
// others wait for a restart and are named.
#include "accounting/node_allocatable.h"
#include "base/quote.h"
#include "vri/applied_policy.h"
#include "vri/daemon.h"
#include "vri/ledger_config.h"

namespace vri {

void Daemon::setConfigReader(ConfigReader reader) {
  MutexLock lock(configMutex_);
  configReader_ = std::move(reader);
}

Result<DaemonConfig> Daemon::readConfiguration(std::string& origin) {
  ConfigReader reader;
  {
    MutexLock lock(configMutex_);
    reader = configReader_;
  }
  if (!reader) return Error::failedPrecondition("this vrid was started without a configuration file to read again");
  return reader(origin);
}

std::map<std::string, std::string> Daemon::runningOptions() {
  MutexLock lock(configMutex_);
  return optionValues(config_);
}

void Daemon::reload(const DaemonConfig& next) {
  auto applied = applyConfiguration(next, false);
  if (!applied.ok()) {
    log_.error("reload: " + applied.error().message());
    return;
  }
}

void Daemon::pinMovedVms(const ConfigChangePlan& plan) {
  for (const TenantChange& change : plan.changes) {
    if (!change.tenant.starts_with("vm/")) continue;
    const std::string uuid = change.tenant.substr(3);
    // The definition too: the VM starts next time where the ledger holds it.
    livePins_.setPins(uuid, true, [this, tenant = change.tenant](LivePinsOutcome outcome) {
      if (outcome.state == LivePinsOutcome::State::kApplied) return;
      log_.warning("policy change: " + tenant + ": libvirt's pins: " + outcome.detail);
    });
  }
}

Result<ConfigDiff> Daemon::applyConfiguration(const DaemonConfig& next, bool dryRun) {
  MutexLock lock(configMutex_);
  const StatePtr now = node_->state();
  VRI_ASSIGN_OR_RETURN(ConfigDiff diff, diffConfig(optionValues(config_), next, *now, node_->sharedTopology()));
  if (dryRun) return diff;
  if (diff.policyChanges) {
    VRI_ASSIGN_OR_RETURN(NodeAllocatable allocatable, computeAllocatable(node_->topology(), next.reservations));
    const PolicyChange change{
        ledgerConfigOf(next, allocatable), allocatable,
        next.reservedCpus.strict,          appliedPolicyText(next),
        appliedPolicyText(config_),        static_cast<uint64_t>(next.memoryMoveMiBPerSecond) << 20};
    VRI_ASSIGN_OR_RETURN(diff.plan, node_->applyPolicy(change).context("placement policy"));
    for (const ConfigOption& option : configOptions()) {
      if (isPlacementPolicyOption(option.name)) VRI_TRY(option.set(config_, option.get(next)));
    }
    node_->setPendingPolicy({});
    pinMovedVms(diff.plan);
  }
  applyReloadable(next);
  return diff;
}

void Daemon::applyReloadable(const DaemonConfig& next) {
  std::vector<std::string> restartNeeded;
  for (const ConfigOption& option : configOptions()) {
    if (isPlacementPolicyOption(option.name) || option.get(next) == option.get(config_)) continue;
    if (option.reloadable) {
      log_.info("reload: " + std::string(option.name) + " = " + option.get(next));
    } else {
      restartNeeded.push_back(option.name);
    }
  }
  log_.setLevel(next.logLevel);
  config_.logLevel = next.logLevel;
  config_.reconcileIntervalSeconds = next.reconcileIntervalSeconds;
  node_->setOptions(optionValues(config_));  // GetNode shows what is in effect now
  {
    MutexLock loop(loopMutex_);
    reconcileIntervalSeconds_ = next.reconcileIntervalSeconds;
    ++loopWakeups_;
  }
  loopWake_.notify_all();
  for (const std::string& name : restartNeeded)
    log_.warning("reload: " + name + " changed in the configuration; it takes effect at the next start");
}

}  // namespace vri
