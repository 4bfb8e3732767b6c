// The placement policy the ledger's placements were made under, kept in the ledger itself (its meta
// entry "applied_policy", written with the records an apply moves, in one transaction). vrid starts
// under it whatever its configuration file now says: a file edited since is a change waiting for
// `vrictl config apply` (or SIGHUP), reported, never a reason to refuse the start or to drop tenants
// that the new policy would not have placed where they are.
#pragma once

#include <string>
#include <vector>

#include "vri/config_diff.h"
#include "vri/daemon_config.h"

namespace vri {

inline constexpr const char* kAppliedPolicyMeta = "applied_policy";

// The placement policy options of `config`, one `name = value` line each, as vrid.conf spells them.
std::string appliedPolicyText(const DaemonConfig& config);

// `file` with the placement policy `text` (appliedPolicyText) says: every other option as the file has it.
Result<DaemonConfig> withAppliedPolicy(const DaemonConfig& file, const std::string& text);

// The placement policy options on which `file` differs from `running`: before is the running value.
std::vector<ConfigSettingChange> pendingPolicy(const DaemonConfig& running, const DaemonConfig& file);

}  // namespace vri
