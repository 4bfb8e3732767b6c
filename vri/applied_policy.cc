#include "vri/applied_policy.h"

namespace vri {

std::string appliedPolicyText(const DaemonConfig& config) {
  std::string out;
  for (const ConfigOption& option : configOptions()) {
    if (!isPlacementPolicyOption(option.name)) continue;
    const std::string value = option.get(config);
    out += std::string(option.name) + " =" + (value.empty() ? "" : " " + value) + "\n";
  }
  return out;
}

Result<DaemonConfig> withAppliedPolicy(const DaemonConfig& file, const std::string& text) {
  DaemonConfig running = file;
  VRI_TRY(applyConfigText(running, text, "the ledger's applied policy"));
  // Only policy options: a ledger that names another is not one this vrid wrote.
  for (const ConfigOption& option : configOptions()) {
    if (!isPlacementPolicyOption(option.name) && option.get(running) != option.get(file))
      return Error::invalidArgument(std::string("the ledger's applied policy sets ") + option.name +
                                    ", which is not a placement policy option");
  }
  return running;
}

std::vector<ConfigSettingChange> pendingPolicy(const DaemonConfig& running, const DaemonConfig& file) {
  std::vector<ConfigSettingChange> pending;
  for (const ConfigOption& option : configOptions()) {
    if (!isPlacementPolicyOption(option.name)) continue;
    const std::string before = option.get(running), after = option.get(file);
    if (before != after) pending.push_back({option.name, before, after, ConfigSettingChange::TakesEffect::kApply});
  }
  return pending;
}

}  // namespace vri
