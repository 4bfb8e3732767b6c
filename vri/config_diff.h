// `vrictl config diff FILE`: what running vrid with FILE as its configuration would change. Each option
// that differs, with when it takes effect (a reload, the next start, or an apply of the placement
// policy); for the placement policy, every tenant that could not stay where it is (planConfigChange);
// and the settings kubelet holds too that would then disagree with its configuration file
// (kubelet_config), which kubelet reads only when it starts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accounting/config_change_plan.h"
#include "vri/daemon_config.h"

namespace vri {

struct ConfigSettingChange {
  enum class TakesEffect { kReload, kRestart, kApply };
  std::string option;
  std::string before, after;
  TakesEffect takesEffect = TakesEffect::kRestart;
};

struct ConfigDiff {
  std::vector<ConfigSettingChange> settings;
  bool policyChanges = false;  // any kApply setting: `plan` says what it would do
  ConfigChangePlan plan;
  std::vector<std::string> kubelet;  // each kubelet setting that would disagree, one sentence each
  std::string kubeletConfig;         // the file they were read from; empty: none named
};

// Whether `option` is part of the placement policy the ledger decides with.
bool isPlacementPolicyOption(const std::string& option);

// `running`: the effective options of the running vrid (name -> value); `candidate`: the configuration
// to compare with; `now` and `topology`: the ledger's state to plan against.
Result<ConfigDiff> diffConfig(const std::map<std::string, std::string>& running, const DaemonConfig& candidate,
                              const LedgerState& now, std::shared_ptr<const Topology> topology);

}  // namespace vri
