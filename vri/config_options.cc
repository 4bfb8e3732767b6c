// The option table: every option of vrid with its default, help, parser and printer.
#include "vri/daemon_config.h"

#include <algorithm>

#include "base/enum_text.h"
#include "base/quote.h"
#include "base/text.h"
#include "libvirt-bridge/hook_config.h"
#include "vri/config_option_builders.h"

namespace vri {

namespace {

using namespace config_option;

constexpr EnumText<TopologyScope, 2> kTopologyScopeText{
    "topology-manager scope", {{{TopologyScope::kContainer, "container"}, {TopologyScope::kPod, "pod"}}}};

std::vector<ConfigOption> buildOptions() {
  std::vector<ConfigOption> o;
  // The cgroup tree.
  o.push_back(stringOption("cgroup_root", "/sys/fs/cgroup", "where the cgroup hierarchies are mounted",
                           &DaemonConfig::cgroupRoot, true));
  o.push_back({"cgroup_version", "auto", "auto (from the mounts), v1 or v2", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 if (v == "auto") {
                   c.cgroupVersion.reset();
                   return {};
                 }
                 VRI_ASSIGN_OR_RETURN(c.cgroupVersion, parseCgroupVersion(v));
                 return {};
               },
               [](const DaemonConfig& c) {
                 return c.cgroupVersion ? std::string(cgroupVersionName(*c.cgroupVersion)) : std::string("auto");
               }});
  o.push_back({"cgroup_v1_controllers", "cpuset,cpu,cpuacct,pids,memory,hugetlb",
               "v1: the controllers whose hierarchies vrid creates cgroups in (cpuset and cpu are required)", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 std::vector<std::string> controllers;
                 for (std::string_view name : splitOn(v, ',')) {
                   static constexpr std::string_view kKnown[] = {"cpuset", "cpu",    "cpuacct",
                                                                 "pids",   "memory", "hugetlb"};
                   if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown))
                     return Error::invalidArgument("unknown v1 controller " + quoteForMessage(name));
                   controllers.emplace_back(name);
                 }
                 for (const char* required : {"cpuset", "cpu"}) {
                   if (std::find(controllers.begin(), controllers.end(), required) == controllers.end())
                     return Error::invalidArgument(std::string("the ") + required + " controller is required");
                 }
                 c.v1Controllers = std::move(controllers);
                 return {};
               },
               [](const DaemonConfig& c) {
                 std::string out;
                 for (const std::string& name : c.v1Controllers) out += (out.empty() ? "" : ",") + name;
                 return out;
               }});
  o.push_back({"cgroup_driver", "cgroupfs", "kubelet's cgroup driver: cgroupfs or systemd", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.layout.driver, parseKubeletDriver(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(kubeletDriverName(c.layout.driver)); }});
  o.push_back({"kubelet_cgroup_root", "/", "kubelet's --cgroup-root: the cgroup kubepods sits in", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(std::string path, parseAbsolutePath(v));
                 VRI_ASSIGN_OR_RETURN(c.layout.kubeletParent, CgroupPath::parse(path));
                 return {};
               },
               [](const DaemonConfig& c) { return "/" + c.layout.kubeletParent.str(); }});
  o.push_back(optionalPathOption("kubelet_config",
                                 "kubelet's configuration file: vrid refuses to start while its reservations, "
                                 "eviction, topology manager or cgroup root differ from vrid's; empty: not read",
                                 &DaemonConfig::kubeletConfig));
  o.push_back(optionalPathOption("kubelet_root_dir",
                                 "kubelet's --root-dir: vrid refuses to start while kubelet's CPU or memory manager "
                                 "checkpoint there names a policy other than none (kubelet's manager holds the node); "
                                 "empty: not read",
                                 &DaemonConfig::kubeletRootDir, "/var/lib/kubelet"));
  o.push_back({"libvirt_layout", "systemd-libvirt-level",
               "how libvirt lays out VM cgroups: systemd (libvirt < 7.1), systemd-libvirt-level, no-systemd", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.layout.libvirt, parseLibvirtLayout(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(libvirtLayoutName(c.layout.libvirt)); }});
  o.push_back({"machine_partition", "machine.slice",
               "libvirt's partition, relative to the cgroup root (machine.slice, or machine without systemd)", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.layout.machinePartition, CgroupPath::parse(v));
                 if (c.layout.machinePartition.depth() == 0)
                   return Error::invalidArgument("the machine partition cannot be the root");
                 return {};
               },
               [](const DaemonConfig& c) { return c.layout.machinePartition.str(); }});
  o.push_back({"ownership", "cpusets",
               "cpusets: kubelet keeps writing its cpu and memory values, VRI its cpusets; everything: VRI writes "
               "(and creates) the whole kubelet side too",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.layout.ownership, parseOwnership(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(ownershipName(c.layout.ownership)); }});
  o.push_back({"systemd_units", "auto",
               "auto, on or off: set the values of the units systemd owns (kubepods and QoS slices, Guaranteed pod "
               "slices, machine.slice, VM scopes) through systemd, so that a daemon-reload keeps them; auto: when "
               "systemd runs, on cgroup v2, with the systemd driver or a machine partition that is a slice",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.systemdUnits, parseSystemdUnitsMode(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(systemdUnitsModeName(c.systemdUnits)); }});
  o.push_back({"cpuset_partitions", "auto",
               "auto, on or off: make each exclusive pod container's cgroup a root cpuset partition, so that the "
               "kernel takes its CPUs from every shared cgroup and an exclusive grant writes the same few files "
               "however many tenants share the pool; auto: when the kernel forms one at start (cgroup v2, Linux "
               "6.7+, kubepods directly below the cgroup root)",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.cpusetPartitions, parseCpusetPartitionsMode(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(cpusetPartitionsModeName(c.cpusetPartitions)); }});
  o.push_back({"systemd_timeout_ms", "500",
               "bound on each call to systemd; one it does not answer in time fails the decision, which is undone",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 10, 60000));
                 c.systemdTimeoutMs = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.systemdTimeoutMs); }});
  // Topology and reservations.
  o.push_back(stringOption("topology", "live", "live, xml:PATH (an lstopo export) or synthetic:DESCRIPTION",
                           &DaemonConfig::topology, false));
  o.push_back({"reserved_cpus", "", "reserve exactly these CPUs (Linux list); empty: reserved_cpu_count", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 if (v.empty()) {
                   c.reservedCpus.cpus.reset();
                   return {};
                 }
                 VRI_ASSIGN_OR_RETURN(c.reservedCpus.cpus, CpuSet::parse(v));
                 return {};
               },
               [](const DaemonConfig& c) { return c.reservedCpus.cpus ? c.reservedCpus.cpus->format() : ""; }});
  o.push_back({"reserved_cpu_count", "0",
               "reserve this many CPUs, chosen as kubelet chooses; 0: ceil(system_reserved_cpu + kube_reserved_cpu)",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 8192));
                 c.reservedCpus.count = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.reservedCpus.count); }});
  o.push_back({"strict_cpu_reservation", "false", "keep the reserved CPUs out of the shared pool", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.reservedCpus.strict, parseBool(v));
                 return {};
               },
               [](const DaemonConfig& c) { return boolName(c.reservedCpus.strict); }});
  o.push_back(quantityOption("system_reserved_cpu", "1", "kubelet's --system-reserved cpu",
                             &NodeReservations::systemReservedCpu));
  o.push_back(
      quantityOption("kube_reserved_cpu", "0", "kubelet's --kube-reserved cpu", &NodeReservations::kubeReservedCpu));
  o.push_back(quantityOption("system_reserved_memory", "0", "kubelet's --system-reserved memory",
                             &NodeReservations::systemReservedMemory));
  o.push_back(quantityOption("kube_reserved_memory", "0", "kubelet's --kube-reserved memory",
                             &NodeReservations::kubeReservedMemory));
  o.push_back(quantityOption("eviction_hard_memory", "100Mi", "kubelet's --eviction-hard memory.available",
                             &NodeReservations::evictionHardMemory));
  // Allocator and NUMA policy.
  o.push_back(takeOption("full_pcpus_only", "false", "kubelet's full-pcpus-only: exclusive CPUs as whole cores",
                         &CpuTakeOptions::fullPcpusOnly));
  o.push_back(takeOption("distribute_cpus_across_numa", "false", "kubelet's distribute-cpus-across-numa",
                         &CpuTakeOptions::distributeCpusAcrossNuma));
  o.push_back(takeOption("align_by_socket", "false", "kubelet's align-by-socket", &CpuTakeOptions::alignBySocket));
  o.push_back(takeOption("prefer_align_cpus_by_uncorecache", "false", "kubelet's prefer-align-cpus-by-uncorecache",
                         &CpuTakeOptions::preferAlignByUncoreCache));
  o.push_back(takeOption("numa_fit", "true",
                         "VRI's placement (best-fit NUMA node, whole cores); false: kubelet's packed fill",
                         &CpuTakeOptions::numaFit));
  o.push_back({"topology_manager_policy", "none", "none, best-effort, restricted or single-numa-node", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.topologyManager.policy, parseTopologyPolicy(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(topologyPolicyName(c.topologyManager.policy)); }});
  o.push_back({"topology_manager_scope", "container",
               "container, or pod (the shim then admits a pod's containers together)", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.topologyScope, kTopologyScopeText.parse(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(kTopologyScopeText.name(c.topologyScope)); }});
  o.push_back({"prefer_closest_numa_nodes", "false", "the topology manager's prefer-closest-numa-nodes", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.topologyManager.preferClosestNumaNodes, parseBool(v));
                 return {};
               },
               [](const DaemonConfig& c) { return boolName(c.topologyManager.preferClosestNumaNodes); }});
  o.push_back(boolOption("pin_guaranteed_memory", "false",
                         "Guaranteed containers with exclusive CPUs get their memory on the same NUMA nodes",
                         &DaemonConfig::pinGuaranteedMemory));
  o.push_back({"vm_memory_overhead", "256Mi", "memory added to every VM's for QEMU itself", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.vmMemoryOverheadBytes, parseBytes(v));
                 return {};
               },
               [](const DaemonConfig& c) {
                 return Quantity::fromValue(static_cast<int64_t>(c.vmMemoryOverheadBytes), Quantity::Format::kBinarySI)
                     .toString();
               }});
  o.push_back({"shared_vcpu_request", "1", "what one shared vCPU asks of the shared pool (CPU quantity)", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(Quantity q, Quantity::parse(v));
                 if (q.milliValue() <= 0) return Error::invalidArgument("must be more than 0");
                 c.sharedVcpuMilli = q.milliValue();
                 return {};
               },
               [](const DaemonConfig& c) { return Quantity::fromMilli(c.sharedVcpuMilli).toString(); }});
  // The service.
  o.push_back(stringOption("socket", "/run/vri/vri.sock",
                           "the read-only socket (mode 0600, root's; 0660 with socket_group)", &DaemonConfig::socket,
                           true));
  o.push_back(stringOption("socket_group", "",
                           "a group whose members may read through the read-only socket (a monitoring agent); "
                           "empty: root only",
                           &DaemonConfig::socketGroup, false));
  o.push_back(stringOption("admin_socket", "/run/vri/admin.sock",
                           "the admin socket (mode 0600, root's alone), the only one that accepts changes",
                           &DaemonConfig::adminSocket, true));
  o.push_back({"max_request_bytes", "1048576", "larger requests are refused with RESOURCE_EXHAUSTED", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 1024, 64 << 20));
                 c.maxRequestBytes = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.maxRequestBytes); }});
  o.push_back(stringOption("state_dir", "/var/lib/vri", "where the ledger (ledger.sqlite) lives",
                           &DaemonConfig::stateDir, true));
  o.push_back({"durability", "normal", "normal: commits survive vrid crashing; full: also power loss", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.durability, parseDurability(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(durabilityName(c.durability)); }});
  o.push_back(stringOption("libvirt_uri", "qemu:///system",
                           "the libvirt connection for the VM side; empty: vrid does not talk to libvirt",
                           &DaemonConfig::libvirtUri, false));
  o.push_back(stringOption("libvirt_pid_dir", "/run/libvirt/qemu", "where libvirt writes each QEMU's <name>.pid",
                           &DaemonConfig::libvirtPidDir, false));
  o.push_back(boolOption("libvirt_define_time_placement", "true",
                         "reserve CPUs for a VM when it is defined and write the pins into its definition",
                         &DaemonConfig::defineTimePlacement));
  o.push_back({"libvirt_pin_drift", "restore",
               "pins changed through libvirt behind VRI's back: restore the ledger's, or adopt the operator's when "
               "they take only free shared CPUs or CPUs the VM holds",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 if (v != "restore" && v != "adopt") {
                   return Error::invalidArgument("libvirt_pin_drift: " + quoteForMessage(v) +
                                                 " is not restore or adopt");
                 }
                 c.adoptPinDrift = v == "adopt";
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(c.adoptPinDrift ? "adopt" : "restore"); }});
  o.push_back({"log_level", "info", "error, warning, info or debug", true,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(c.logLevel, parseLogLevel(v));
                 return {};
               },
               [](const DaemonConfig& c) { return std::string(logLevelName(c.logLevel)); }});
  o.push_back({"release_grace", "300",
               "seconds a tenant's cgroups (a VM's QEMU process) must be gone before reconcile releases it", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 7 * 86400));
                 c.releaseGraceSeconds = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.releaseGraceSeconds); }});
  // Each page moved is read on one node and written on the other: 256 MiB/s is half a GB/s of memory
  // traffic, a few percent of one node's bandwidth, so the node's workloads keep theirs; a 4 GiB
  // container moves in 16 s, while decisions wait.
  o.push_back({"memory_move_rate", "256",
               "MiB per second a placement policy change (vrictl config apply) moves a container's memory bound "
               "to NUMA nodes at, when its nodes change; decisions wait while it moves; 0: such a change is refused",
               true,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 65536));
                 c.memoryMoveMiBPerSecond = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.memoryMoveMiBPerSecond); }});
  o.push_back({"usage_interval_ms", "1000",
               "milliseconds between two reads of every tenant's CPU, throttling and memory counters and of each "
               "CPU's busy time; 0: not sampled (vrictl top and the usage metrics are then empty)",
               false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 3'600'000));
                 if (n != 0 && n < 100) return Error::invalidArgument("want 0 or at least 100, got " + v);
                 c.usageIntervalMs = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.usageIntervalMs); }});
  o.push_back({"usage_history", "60", "usage rounds kept in memory (GetUsage's history), the latest included", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 1, 3600));
                 c.usageHistory = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.usageHistory); }});
  o.push_back(boolOption("usage_v1_memory", "true",
                         "cgroup v1: read tenants' memory use (memory.usage_in_bytes) from the memory hierarchy; "
                         "only read: vrid creates and writes there only when cgroup_v1_controllers names memory",
                         &DaemonConfig::usageV1Memory));
  o.push_back({"metrics_port", "0", "TCP port of the Prometheus text endpoint (GET /metrics); 0: no endpoint", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 65535));
                 c.metricsPort = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.metricsPort); }});
  o.push_back({"metrics_address", "127.0.0.1",
               "the IPv4 address the metrics endpoint listens on (0.0.0.0: every interface)", false,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_TRY(parseIpv4Address(v));
                 c.metricsAddress = v;
                 return {};
               },
               [](const DaemonConfig& c) { return c.metricsAddress; }});
  o.push_back(optionalPathOption("metrics_token_file",
                                 "a file holding the bearer token every scrape must send (Authorization: Bearer "
                                 "...); required with metrics_port; root's, and not readable by everyone (its "
                                 "group may read it)",
                                 &DaemonConfig::metricsTokenFile));
  o.push_back({"reconcile_interval", "30", "seconds between drift repairs; 0: only at start-up and on request", true,
               [](DaemonConfig& c, const std::string& v) -> Result<void> {
                 VRI_ASSIGN_OR_RETURN(int64_t n, parseInteger(v, 0, 86400));
                 c.reconcileIntervalSeconds = static_cast<int>(n);
                 return {};
               },
               [](const DaemonConfig& c) { return std::to_string(c.reconcileIntervalSeconds); }});
  return o;
}

}  // namespace

constexpr EnumText<SystemdUnitsMode, 3> kSystemdUnitsText{
    "systemd_units",
    {{{SystemdUnitsMode::kAuto, "auto"}, {SystemdUnitsMode::kOn, "on"}, {SystemdUnitsMode::kOff, "off"}}}};
Result<SystemdUnitsMode> parseSystemdUnitsMode(std::string_view text) { return kSystemdUnitsText.parse(text); }
std::string_view systemdUnitsModeName(SystemdUnitsMode mode) { return kSystemdUnitsText.name(mode); }
constexpr EnumText<CpusetPartitionsMode, 3> kCpusetPartitionsText{
    "cpuset_partitions",
    {{{CpusetPartitionsMode::kAuto, "auto"}, {CpusetPartitionsMode::kOn, "on"}, {CpusetPartitionsMode::kOff, "off"}}}};
Result<CpusetPartitionsMode> parseCpusetPartitionsMode(std::string_view text) {
  return kCpusetPartitionsText.parse(text);
}
std::string_view cpusetPartitionsModeName(CpusetPartitionsMode mode) { return kCpusetPartitionsText.name(mode); }

const std::vector<ConfigOption>& configOptions() {
  static const std::vector<ConfigOption> options = buildOptions();  // immutable after first use
  return options;
}

DaemonConfig defaultConfig() {
  DaemonConfig config;
  for (const ConfigOption& option : configOptions()) {
    auto set = option.set(config, option.defaultValue);
    if (!set.ok()) std::abort();  // a default that does not parse is a bug caught by every test
  }
  return config;
}

const ConfigOption* findConfigOption(std::string_view name) {
  for (const ConfigOption& option : configOptions()) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

std::optional<std::string> removedConfigOption(std::string_view name) {
  if (name == "admin_group")
    return "admin_group is no more: the admin socket is root's alone (mode 0600), because whoever can connect to it "
           "moves placement; give a monitoring agent the read-only socket with socket_group";
  return std::nullopt;
}

std::string hookSocketPath(const DaemonConfig& config) { return hookSocketBeside(config.adminSocket); }

Result<void> setConfigOption(DaemonConfig& config, std::string_view name, const std::string& value) {
  if (auto removed = removedConfigOption(name)) return Error::invalidArgument(*removed);
  const ConfigOption* option = findConfigOption(name);
  if (option == nullptr) return Error::invalidArgument("unknown option " + quoteForMessage(name));
  VRI_TRY(option->set(config, value).context(std::string(name)));
  // What --print-config shows must read back as the same setting: a file cannot carry leading or
  // trailing blanks (they are trimmed) or control characters (found by fuzz/config_fuzz: a path's
  // trailing "/" dropped, which left a blank at the end of the value).
  const std::string shown = option->get(config);
  const bool blank_edge = !shown.empty() && (std::isspace(static_cast<unsigned char>(shown.front())) ||
                                             std::isspace(static_cast<unsigned char>(shown.back())));
  const bool control =
      std::any_of(shown.begin(), shown.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (blank_edge || control)
    return Error::invalidArgument(std::string(name) + ": " + quoteForMessage(value) +
                                  " takes a form a configuration file cannot hold (blanks at its ends or control "
                                  "characters)");
  return {};
}

}  // namespace vri
