#include "vri/daemon.h"

#include <fcntl.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>

#include "accounting/hwloc_topology.h"
#include "accounting/sqlite_ledger_store.h"
#include "base/owned_path.h"
#include "base/quote.h"
#include "base/unix_socket.h"
#include "base/version.h"
#include "cgroup-model/partition_probe.h"
#include "cgroup-model/unit_ownership.h"
#include "systemd/sd_bus_units.h"
#include "vri/applied_policy.h"
#include "vri/kubelet_config.h"
#include "vri/ledger_config.h"
#include "vri/metrics_text.h"
#include "vri/metrics_token.h"
#include "vri/state_directory.h"

namespace vri {

namespace {

// The ledger: begun on a first start, otherwise it must be there and sound,
// unless the operator says --init-ledger (a damaged file is then kept aside).
Result<std::unique_ptr<SqliteLedgerStore>> openLedger(const DaemonConfig& config, bool firstStart, Logger& log) {
  const std::string path = config.ledgerPath();
  if (firstStart) {
    log.info("first start on " + config.stateDir + ": beginning a new ledger at " + path);
    return SqliteLedgerStore::open(path, config.durability, LedgerFile::kCreateIfAbsent);
  }
  auto store = SqliteLedgerStore::open(path, config.durability, LedgerFile::kMustExist);
  // Only a ledger that is lost or damaged is set aside: one that is sound but busy (another process
  // holds a lock on it) is refused as it is, whatever the operator said.
  if (store.ok() || !config.initLedger) return store;
  if (store.error().code() != ErrorCode::kDataLoss)
    return std::move(store).context("--init-ledger sets aside only a ledger that is lost or damaged; this one is not");
  // Never over an earlier copy: two runs in one second get two names.
  const std::string base = path + ".damaged-" + std::to_string(::time(nullptr));
  std::string aside = base;
  for (int n = 1; ::access(aside.c_str(), F_OK) == 0 || ::access((aside + "-wal").c_str(), F_OK) == 0; ++n) {
    aside = base + "-" + std::to_string(n);
  }
  bool kept = false;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string from = path + suffix;
    if (::access(from.c_str(), F_OK) != 0) continue;
    if (::rename(from.c_str(), (aside + suffix).c_str()) != 0)
      return Error::fromErrno(errno, "--init-ledger: setting " + from + " aside");
    kept = true;
  }
  log.warning("--init-ledger: beginning a new ledger at " + path +
              (kept ? " (what was there is kept as " + aside + ")" : std::string(" (there was none)")) +
              "; running tenants are adopted from their cgroups");
  return SqliteLedgerStore::open(path, config.durability, LedgerFile::kCreateIfAbsent);
}

// kubelet_cgroup_root must exist: kubelet refuses to start without its
// --cgroup-root, and VRI, which makes kubepods below it when it owns
// everything, does not make the root either. Said at start-up, by hierarchy.
Result<void> checkKubeletRoot(const CgroupFs& fs, const CgroupBackend& backend, const DaemonConfig& config,
                              Logger& log) {
  const CgroupPath& root = config.layout.kubeletParent;
  for (const std::string& hierarchy : backend.hierarchies()) {
    if (fs.exists({hierarchy, root})) continue;
    const std::string what = "kubelet_cgroup_root /" + root.str() + " does not exist in the " +
                             (hierarchy.empty() ? std::string("unified") : hierarchy) + " hierarchy";
    if (config.layout.ownership == Ownership::kEverything)
      return Error::failedPrecondition(what +
                                       ": VRI makes kubepods below it, not the root itself (kubelet, too, "
                                       "refuses to start without its --cgroup-root); create it, or set "
                                       "kubelet_cgroup_root to a cgroup that exists");
    log.warning(what + ": pods are placed once kubelet has made it and kubepods below it");
  }
  return {};
}

// Whether the layout names units systemd owns: kubelet's systemd driver, or a machine partition that is a slice.
bool layoutNamesUnits(const TreeLayout& layout) {
  return layout.driver == KubeletDriver::kSystemd ||
         machineUnitKindOf(layout, layout.machinePartition) == UnitKind::kMachineSlice;
}

// systemd_units decided: whether vrid sets the units' values through systemd.
Result<bool> systemdKeepsUnits(const DaemonConfig& config, CgroupVersion version, bool busGiven) {
  if (config.systemdUnits == SystemdUnitsMode::kOff) return false;
  const bool names = layoutNamesUnits(config.layout);
  const bool running = busGiven || systemdIsRunning();
  const bool v2 = version == CgroupVersion::kV2;
  if (config.systemdUnits == SystemdUnitsMode::kOn && !(names && running && v2)) {
    return Error::failedPrecondition(std::string("systemd_units = on, but ") +
                                     (!running ? "systemd is not the service manager here"
                                      : !v2    ? "the node runs cgroup v1, where systemd writes no cpuset"
                                               : "neither cgroup_driver = systemd nor a machine_partition that is a "
                                                 "slice names a unit systemd owns"));
  }
  return names && running && v2;
}

// cpuset_partitions decided by forming one (partition_probe.h), on the kernel's cgroupfs itself.
Result<bool> chooseCpusetPartitions(const DaemonConfig& config, CgroupFs& kernel, const CgroupBackend& backend,
                                    const TreeLayout& layout, const CpuSet& sharedCpus, Logger& log) {
  if (config.cpusetPartitions == CpusetPartitionsMode::kOff) {
    log.info("cpuset_partitions off: shared cgroups follow the shared pool");
    return false;
  }
  const auto namer = makeKubeletNamer(layout.driver, layout.kubeletParent);
  VRI_ASSIGN_OR_RETURN(PartitionProbe probe, probeCpusetPartitions(kernel, backend, *namer, sharedCpus));
  if (!probe.usable && config.cpusetPartitions == CpusetPartitionsMode::kOn)
    return Error::failedPrecondition("cpuset_partitions = on, but " + probe.reason);
  log.info(probe.usable ? "cpuset partitions: exclusive pod containers become root partitions (" + probe.reason + ")"
                        : "cpuset partitions not used: " + probe.reason + "; shared cgroups follow the shared pool");
  return probe.usable;
}

// The configuration vrid runs with: the file's, with the placement policy the ledger was placed
// under. The file's policy is recorded as the ledger's when nothing was placed under another: a first
// start, a ledger from before the policy was kept, or one that holds no tenant.
Result<DaemonConfig> runningConfig(const DaemonConfig& file, LedgerStore& store, Logger& log) {
  VRI_ASSIGN_OR_RETURN(const auto meta, store.meta());
  const auto applied = meta.find(kAppliedPolicyMeta);
  DaemonConfig running = file;
  if (applied != meta.end()) {
    VRI_ASSIGN_OR_RETURN(running, withAppliedPolicy(file, applied->second));
  }
  const std::vector<ConfigSettingChange> pending = pendingPolicy(running, file);
  bool placedNothing = applied == meta.end();
  if (!placedNothing && !pending.empty()) {
    VRI_ASSIGN_OR_RETURN(const StoredLedger stored, store.load());
    placedNothing = stored.pods.empty() && stored.vms.empty();
  }
  if (placedNothing) {
    if (applied == meta.end() || !pending.empty()) VRI_TRY(store.setMeta(kAppliedPolicyMeta, appliedPolicyText(file)));
    return file;
  }
  for (const ConfigSettingChange& change : pending)
    log.warning("placement policy: " + change.option + " is " + quoteForMessage(change.before) + " in the ledger and " +
                quoteForMessage(change.after) +
                " in the configuration file; vrid keeps the ledger's until `vrictl config apply` (or SIGHUP) "
                "applies the file's");
  return running;
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::start(const DaemonConfig& config, CgroupFs& fs, Logger& log,
                                              std::shared_ptr<const Topology> topology, const Clock& clock,
                                              SystemdUnits* systemd) {
  std::unique_ptr<Daemon> d(new Daemon(config, fs, log, clock));
  log.setLevel(config.logLevel);
  log.info("vrid " + std::string(packageVersion()) + " starting");
  if (!topology) {
    VRI_ASSIGN_OR_RETURN(Topology loaded, loadTopology(config.topology).context("topology"));
    topology = std::make_shared<const Topology>(std::move(loaded));
  }
  VRI_ASSIGN_OR_RETURN(NodeAllocatable allocatable, computeAllocatable(*topology, config.reservations));
  // Before anything is claimed: a vrid that disagrees with kubelet changes nothing.
  VRI_TRY(checkKubeletConfig(config));
  VRI_TRY(checkKubeletCheckpoints(config));
  // Read before anything starts, so that a missing or careless token file refuses the start.
  std::string metricsToken;
  if (config.metricsPort != 0) {
    if (config.metricsTokenFile.empty())
      return Error::invalidArgument(
          "metrics_port is set without metrics_token_file: the metrics name every tenant, and a TCP port is open to "
          "every local user, so each scrape must send a bearer token (see docs/operating.md, the metrics endpoint)");
    VRI_ASSIGN_OR_RETURN(metricsToken, readMetricsToken(config.metricsTokenFile));
  }
  if (!config.kubeletConfig.empty())
    log.info("kubelet_config " + config.kubeletConfig + " agrees with vrid's settings");
  if (!config.socketGroup.empty()) VRI_TRY(groupId(config.socketGroup).context("socket_group"));
  // Directories others may write are refused before anything is claimed (SocketClaim checks again as it
  // takes each socket, and creates the directories that are missing).
  const std::string hook_socket = hookSocketPath(config);
  for (const std::string* socket : {&config.socket, &config.adminSocket, &hook_socket})
    VRI_TRY(refuseDirectoryOfWritableByOthers(*socket, "the directory of " + *socket));

  // Every exclusive resource before anything else: the state directory, then
  // the sockets. A second vrid on either stops here, before it reads the ledger
  // or touches a cgroup, and removes nothing that is not its own.
  VRI_ASSIGN_OR_RETURN(StateDirectory state, StateDirectory::claim(config.stateDir));
  d->stateDir_ = std::make_unique<StateDirectory>(std::move(state));
  VRI_ASSIGN_OR_RETURN(d->readOnlyClaim_, SocketClaim::take(config.socket).context("socket"));
  VRI_ASSIGN_OR_RETURN(d->adminClaim_, SocketClaim::take(config.adminSocket).context("admin_socket"));
  VRI_ASSIGN_OR_RETURN(d->hookClaim_, SocketClaim::take(hook_socket).context("hook_socket"));
  VRI_ASSIGN_OR_RETURN(auto store, openLedger(config, d->stateDir_->firstStart(), log));
  VRI_TRY(d->stateDir_->recordLedgerBegun());
  if (const int from = store->upgradedFrom(); from != 0)
    log.warning("ledger " + config.ledgerPath() + " upgraded from schema version " + std::to_string(from) + " to " +
                std::to_string(currentLedgerSchema().version) + "; the file as it was is kept at " +
                schemaBackupPath(config.ledgerPath(), from) + " (an older vrid needs it back)");
  // The placement policy the ledger's placements were made under, whatever the file says now.
  VRI_ASSIGN_OR_RETURN(const DaemonConfig running, runningConfig(config, *store, log));
  d->config_ = running;
  VRI_ASSIGN_OR_RETURN(allocatable, computeAllocatable(*topology, running.reservations));
  VRI_ASSIGN_OR_RETURN(d->ledger_, Ledger::open(topology, ledgerConfigOf(running, allocatable), std::move(store)));

  VRI_ASSIGN_OR_RETURN(auto backend,
                       backendForHost(d->fs_, config.cgroupRoot, config.cgroupVersion, config.v1Controllers));
  const CgroupVersion version = backend->version();
  VRI_TRY(checkKubeletRoot(d->fs_, *backend, config, log));
  TreeLayout layout = config.layout;
  VRI_ASSIGN_OR_RETURN(layout.systemdUnits, systemdKeepsUnits(config, version, systemd != nullptr));
  CgroupFs* sync_fs = &d->fs_;
  if (layout.systemdUnits) {
    if (systemd == nullptr) {
      VRI_ASSIGN_OR_RETURN(d->ownSystemd_, SdBusUnits::connect(std::chrono::milliseconds(config.systemdTimeoutMs)));
      systemd = d->ownSystemd_.get();
    }
    d->systemdFs_ = std::make_unique<SystemdCgroupFs>(d->fs_, *systemd, layout);
    sync_fs = d->systemdFs_.get();
    log.info(
        "systemd owns kubelet's and machined's units: their values are set through systemd too "
        "(SetUnitProperties, runtime, " +
        std::to_string(config.systemdTimeoutMs) + " ms per call)");
  } else if (layoutNamesUnits(config.layout)) {
    log.info("systemd_units " + std::string(systemdUnitsModeName(config.systemdUnits)) +
             ": unit values are written to the files only");
  }
  const StatePtr at_start = d->ledger_->state();
  VRI_ASSIGN_OR_RETURN(layout.cpusetPartitions,
                       chooseCpusetPartitions(config, d->fs_, *backend, layout, at_start->shared(), log));
  d->sync_ = std::make_unique<CgroupSync>(*sync_fs, std::move(backend), layout, allocatable, topology,
                                          running.sharedVcpuMilli, config.v1Controllers, d->systemdFs_.get());
  NodeFacts facts{allocatable,
                  version,
                  optionValues(running),
                  config.layout.ownership == Ownership::kEverything,
                  running.reservedCpus.strict,
                  config.layout.driver,
                  {}};
  NodeManagerOptions options;
  options.releaseGrace = std::chrono::seconds(config.releaseGraceSeconds);
  options.clock = &clock;
  d->node_ = std::make_unique<NodeManager>(*d->ledger_, *d->sync_, d->events_, log, std::move(facts), options);
  log.info("topology: " + topology->source() + ", " + std::to_string(topology->onlineCpus().count()) +
           " CPUs online; cgroup " + std::string(cgroupVersionName(version)) + " at " + config.cgroupRoot +
           "; ledger " + config.ledgerPath());
  if (const auto pending = pendingPolicy(running, config); !pending.empty()) {
    std::map<std::string, std::string> waiting;
    std::string detail;
    for (const ConfigSettingChange& change : pending) {
      waiting[change.option] = change.after;
      detail += (detail.empty() ? "" : ", ") + change.option + " " + quoteForMessage(change.before) + " -> " +
                quoteForMessage(change.after);
    }
    d->node_->setPendingPolicy(std::move(waiting));
    d->node_->announce(EventKind::kPolicyPending, "", detail + ": vrictl config apply applies it");
  }
  VRI_TRY(d->node_->startUp().context("start-up reconcile"));
  VRI_TRY(d->startUsage(version));
  VRI_TRY(d->serve());
  if (config.metricsPort != 0) {
    VRI_ASSIGN_OR_RETURN(
        d->metrics_,
        MetricsServer::start(config.metricsAddress, config.metricsPort, std::move(metricsToken), [daemon = d.get()] {
          return renderMetrics(*daemon->node_, daemon->usage_.get(), daemon->callMetrics_);
        }));
    log.info("serving metrics on http://" + config.metricsAddress + ":" + std::to_string(d->metrics_->port()) +
             "/metrics");
  }
  if (!config.libvirtUri.empty()) {
    d->libvirt_ =
        std::make_unique<LibvirtSync>(*d->node_, log,
                                      LibvirtSyncOptions{config.libvirtUri, config.libvirtPidDir,
                                                         config.defineTimePlacement, config.adoptPinDrift, &clock});
    d->livePins_.attach(d->libvirt_.get());
  }
  {
    MutexLock lock(d->loopMutex_);
    d->reconcileIntervalSeconds_ = config.reconcileIntervalSeconds;
  }
  d->reconcileThread_ = std::thread([daemon = d.get()] { daemon->reconcileLoop(); });
  return d;
}

Result<void> Daemon::startUsage(CgroupVersion version) {
  if (config_.usageIntervalMs == 0) {
    log_.info("usage is not sampled (usage_interval_ms = 0)");
    return {};
  }
  VRI_ASSIGN_OR_RETURN(UsageSources sources, findUsageSources(fs_, config_.cgroupRoot, version, config_.usageV1Memory));
  UsageSamplerOptions options;
  options.interval = std::chrono::milliseconds(config_.usageIntervalMs);
  options.history = static_cast<size_t>(config_.usageHistory);
  options.ticksPerSecond = ::sysconf(_SC_CLK_TCK);
  usage_ = std::make_unique<UsageSampler>(
      fs_, sources, node_->layout(), [node = node_.get()] { return node->state(); }, options, clock_, log_);
  usage_->start();
  std::string memory = !sources.memory ? "not read"
                       : version == CgroupVersion::kV2
                           ? "memory.current"
                           : "memory.usage_in_bytes in the " + *sources.memory + " hierarchy, read only";
  log_.info("sampling usage every " + std::to_string(config_.usageIntervalMs) + " ms, keeping " +
            std::to_string(config_.usageHistory) + " rounds; memory: " + memory);
  return {};
}

Result<void> Daemon::serve() {
  // Both are gRPC's own process-wide switches, set before any server is built.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  refusals_ = std::make_unique<RateLimitedLog>([this](const std::string& line) { log_.warning(line); }, clock_);
  protobufLog_ = std::make_unique<ProtobufLogRoute>(*refusals_);
  readOnlyService_ = std::make_unique<VriService>(*node_, SocketAccess::kReadOnly, calls_, *refusals_, clients_,
                                                  livePins_, clock_, usage_.get(), &callMetrics_, this);
  adminService_ = std::make_unique<VriService>(*node_, SocketAccess::kAdmin, calls_, *refusals_, clients_, livePins_,
                                               clock_, usage_.get(), &callMetrics_, this);
  struct Endpoint {
    const std::string& path;
    VriService& service;
    std::unique_ptr<grpc::Server>& server;
    SocketClaim& claim;
    mode_t mode;
    std::string group;
  };
  for (Endpoint e : {Endpoint{config_.socket, *readOnlyService_, readOnlyServer_, *readOnlyClaim_,
                              config_.socketGroup.empty() ? mode_t{0600} : mode_t{0660}, config_.socketGroup},
                     // Never to a group: whoever connects here moves placement.
                     Endpoint{config_.adminSocket, *adminService_, adminServer_, *adminClaim_, 0600, ""}}) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + e.path, grpc::InsecureServerCredentials());
    builder.RegisterService(&e.service);
    builder.SetMaxReceiveMessageSize(config_.maxRequestBytes);
    // Each socket's own bound on the threads its streams hold (the unary calls run on gRPC's callback
    // threads, outside it): what read-only clients hold cannot take the admin socket's threads.
    grpc::ResourceQuota quota(std::string(&e.service == readOnlyService_.get() ? "read-only" : "admin") + " socket");
    quota.SetMaxThreads(VriService::kMaxServerThreads);
    builder.SetResourceQuota(quota);
    std::unique_ptr<grpc::ServerCompletionQueue> decisions = builder.AddCompletionQueue();
    e.server = builder.BuildAndStart();
    if (!e.server) return Error::failedPrecondition("could not serve on " + e.path);
    e.service.startDeciding(std::move(decisions));
    VRI_TRY(e.claim.bound());
    // The socket appears with the umask's mode (vrid sets 077): nobody else can
    // connect before the intended mode is in place.
    VRI_TRY(setSocketAccess(e.path, e.mode, e.group));
    log_.info("serving " + std::string(&e.service == readOnlyService_.get() ? "read-only" : "admin") + " calls on " +
              e.path);
  }
  VRI_ASSIGN_OR_RETURN(hookDoor_, HookDoor::open(hookClaim_->path(), *adminService_, log_));
  VRI_TRY(hookClaim_->bound());
  log_.info("serving vri-hook's calls on " + hookClaim_->path());
  return {};
}

void Daemon::reconcileLoop() {
  while (true) {
    {
      MutexLock lock(loopMutex_);
      if (stopping_) return;
      const uint64_t wakeups = loopWakeups_;
      if (reconcileIntervalSeconds_ <= 0) {
        while (!stopping_ && wakeups == loopWakeups_) lock.wait(loopWake_);
        continue;
      }
      // A reload or shutdown starts the interval again.
      const Clock::TimePoint due = clock_.now() + std::chrono::seconds(reconcileIntervalSeconds_);
      bool passed = false;
      while (!stopping_ && wakeups == loopWakeups_ && !passed) passed = clock_.waitUntil(lock, loopWake_, due);
      if (!passed) continue;
    }
    (void)node_->reconcile(false);  // logs and publishes its own outcome
  }
}

void Daemon::shutdown(std::chrono::milliseconds grace) {
  if (shutDown_) return;
  shutDown_ = true;
  if (!readOnlyServer_ && !adminServer_ && !reconcileThread_.joinable()) return;  // never started serving
  log_.info("shutting down: finishing calls in flight");
  livePins_.attach(nullptr);   // a move from now on answers without libvirt
  libvirt_.reset();            // no more libvirt events turn into decisions; moves waiting on it are answered
  metrics_.reset();            // no scrape reads what goes next
  events_.close();             // watches end now instead of holding the shutdown
  if (usage_) usage_->stop();  // and usage watches
  // Deciding calls in flight get the grace; then nothing is left worth waiting for, idle connections included.
  calls_.closeAndDrain(grace);
  // The hook's calls accepted and not yet decided are answered as vrid's absence is (the gate is closed).
  if (hookDoor_) hookDoor_->close();
  const auto now = std::chrono::system_clock::now();
  for (auto* server : {readOnlyServer_.get(), adminServer_.get()}) {
    if (server) server->Shutdown(now);
  }
  for (auto* server : {readOnlyServer_.get(), adminServer_.get()}) {
    if (server) server->Wait();
  }
  // Only now: gRPC hands the calls it cancelled back through the decision threads' queues.
  for (auto* service : {readOnlyService_.get(), adminService_.get()}) {
    if (service) service->stopDeciding();
  }
  {
    MutexLock lock(loopMutex_);
    stopping_ = true;
  }
  loopWake_.notify_all();
  if (reconcileThread_.joinable()) reconcileThread_.join();
  // Only the sockets this vrid bound go, and only while they are still the ones it bound.
  readOnlyClaim_.reset();
  adminClaim_.reset();
  hookClaim_.reset();
  log_.info("stopped");
}

Daemon::~Daemon() { shutdown(std::chrono::milliseconds(0)); }

}  // namespace vri
