// What the services may ask of vrid's configuration: its file read again, and a configuration applied
// (the Daemon's, which owns the running configuration; SIGHUP takes the same way).
#pragma once

#include "vri/config_diff.h"
#include "vri/daemon_config.h"

namespace vri {

class ConfigControl {
 public:
  virtual ~ConfigControl() = default;
  // vrid's configuration file and flags, read again now; with the file's name for messages.
  virtual Result<DaemonConfig> readConfiguration(std::string& origin) = 0;
  // The running configuration's options (name -> value).
  virtual std::map<std::string, std::string> runningOptions() = 0;
  // `next` applied: the options a reload may change, and the placement policy as one transaction.
  // With `dryRun` the diff alone. Refused, changing nothing, when the policy cannot hold every tenant.
  virtual Result<ConfigDiff> applyConfiguration(const DaemonConfig& next, bool dryRun) = 0;
};

}  // namespace vri
