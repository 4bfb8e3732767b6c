// vrid's configuration: one table of options, read from a config file and
// overridden by flags of the same name.
//
// File format (deploy/vrid.conf): one `name = value` per line; `#` starts a
// comment line; blank lines are ignored; unknown names, repeated names and
// bad values are refused with the file and line. Flags: `--name=value` or
// `--name value`, with '-' or '_' between words.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "accounting/sqlite_ledger_store.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/node_tree.h"
#include "vri/logger.h"

namespace vri {

enum class TopologyScope { kContainer, kPod };

// Whether vrid sets the values of the units systemd owns through systemd (unit_ownership.h).
enum class SystemdUnitsMode {
  kAuto,  // when systemd runs, on cgroup v2, and the layout names its units (the systemd driver, machine.slice)
  kOn,    // the same, and start-up fails when that is not so
  kOff,   // only the files: a daemon-reload undoes what systemd owns (repaired by the next reconcile)
};
Result<SystemdUnitsMode> parseSystemdUnitsMode(std::string_view text);  // "auto" | "on" | "off"
std::string_view systemdUnitsModeName(SystemdUnitsMode mode);

// Whether exclusive pod containers become cpuset partitions (cgroup-model/partition_probe.h).
enum class CpusetPartitionsMode {
  kAuto,  // when the kernel forms one at start (cgroup v2, Linux 6.7+, kubepods below the cgroup root)
  kOn,    // the same, and start-up fails when it does not
  kOff,   // every shared cgroup's cpuset is rewritten when the shared pool changes
};
Result<CpusetPartitionsMode> parseCpusetPartitionsMode(std::string_view text);  // "auto" | "on" | "off"
std::string_view cpusetPartitionsModeName(CpusetPartitionsMode mode);

struct DaemonConfig {
  // The cgroup tree.
  std::string cgroupRoot;
  std::optional<CgroupVersion> cgroupVersion;  // nullopt: detect
  std::vector<std::string> v1Controllers;      // the v1 controllers vrid creates cgroups in
  TreeLayout layout;                           // layout.systemdUnits is decided at start from systemd_units
  SystemdUnitsMode systemdUnits = SystemdUnitsMode::kAuto;
  CpusetPartitionsMode cpusetPartitions = CpusetPartitionsMode::kAuto;  // layout.cpusetPartitions is decided at start
  int systemdTimeoutMs = 500;
  // kubelet's configuration file, checked against the options below at start (vri/kubelet_config.h); empty: not read.
  std::string kubeletConfig;
  // kubelet's --root-dir, where its CPU and memory managers keep their checkpoints; empty: not read.
  std::string kubeletRootDir = "/var/lib/kubelet";
  // Topology and reservations.
  std::string topology;  // live | xml:PATH | synthetic:DESCRIPTION
  ReservedCpusConfig reservedCpus;
  NodeReservations reservations;
  // Allocator and NUMA policy.
  CpuTakeOptions take;
  TopologyManagerOptions topologyManager;
  TopologyScope topologyScope = TopologyScope::kContainer;
  bool pinGuaranteedMemory = false;
  uint64_t vmMemoryOverheadBytes = 0;
  int64_t sharedVcpuMilli = 0;
  // The service.
  std::string socket;
  std::string adminSocket;
  std::string socketGroup;  // may read through `socket`; empty: root only
  int maxRequestBytes = 0;
  std::string stateDir;
  Durability durability = Durability::kNormal;
  std::string libvirtUri;  // empty: no libvirt connection
  std::string libvirtPidDir;
  bool defineTimePlacement = true;
  bool adoptPinDrift = false;  // pins changed through libvirt behind VRI's back: adopted when they fit, else restored
  int releaseGraceSeconds = 300;     // how long a tenant must be gone before reconcile releases it
  int memoryMoveMiBPerSecond = 256;  // how fast a policy change moves a container's bound memory
  // Usage sampling (vri/usage_sampler.h) and the metrics endpoint (vri/metrics_server.h).
  int usageIntervalMs = 1000;  // 0: not sampled
  int usageHistory = 60;       // rounds kept in memory
  bool usageV1Memory = true;   // v1: read tenants' memory use from the memory hierarchy (never written there)
  int metricsPort = 0;         // 0: no metrics endpoint
  std::string metricsAddress = "127.0.0.1";
  std::string metricsTokenFile;  // the bearer token every scrape must send; required with metricsPort
  // May change at run time (SIGHUP).
  LogLevel logLevel = LogLevel::kInfo;
  int reconcileIntervalSeconds = 0;  // 0: only at start-up and on request
  // From the command line only (--init-ledger): begin a new ledger where the
  // state directory's is missing or damaged, setting a damaged file aside.
  bool initLedger = false;

  std::string ledgerPath() const { return stateDir + "/ledger.sqlite"; }
};

struct ConfigOption {
  const char* name;  // as in the file: "reserved_cpus"
  const char* defaultValue;
  const char* help;
  bool reloadable;  // takes effect on SIGHUP
  std::function<Result<void>(DaemonConfig&, const std::string&)> set;
  std::function<std::string(const DaemonConfig&)> get;
};

// Every option, in the order the documentation lists them.
const std::vector<ConfigOption>& configOptions();
const ConfigOption* findConfigOption(std::string_view name);  // null: no such option
// Why an option that once was is not any more, so that an old config file is refused with the reason.
std::optional<std::string> removedConfigOption(std::string_view name);
Result<void> setConfigOption(DaemonConfig& config, std::string_view name, const std::string& value);

// Every option at its default.
DaemonConfig defaultConfig();

// Applies a config file's text on top of `config`; `origin` names it in errors.
Result<void> applyConfigText(DaemonConfig& config, std::string_view text, const std::string& origin);

// The effective configuration, in the file format.
std::string formatConfig(const DaemonConfig& config);
// Every option's value as the file would spell it, by name (what GetNode and `config diff` compare).
std::map<std::string, std::string> optionValues(const DaemonConfig& config);

struct DaemonCommand {
  std::string configPath = "/etc/vri/vrid.conf";
  bool configPathGiven = false;
  std::vector<std::pair<std::string, std::string>> overrides;  // flags, applied after the file
  bool help = false;
  bool printConfig = false;
  bool initLedger = false;
  bool version = false;
};

Result<DaemonCommand> parseDaemonCommand(const std::vector<std::string>& args);
std::string daemonUsage();

// Reads the file (optional when its path was not given) and applies the flags.
Result<DaemonConfig> loadDaemonConfig(const DaemonCommand& command);

// Where vri-hook finds vrid (hook_door.h): hook.sock beside the admin socket (hookSocketBeside).
std::string hookSocketPath(const DaemonConfig& config);

}  // namespace vri
