// vrid's life: start-up (ledger, topology, cgroups, the start-up check and a
// first reconcile), the two gRPC servers and the hook socket, the periodic reconcile, reload and
// shutdown. The process-wide parts (signals, umask) stay in vrid_main.cc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <grpcpp/server.h>

#include "base/clock.h"
#include "base/thread_annotations.h"
#include "base/unix_socket.h"
#include "systemd/systemd_cgroupfs.h"
#include "vri/call_metrics.h"
#include "vri/config_control.h"
#include "vri/daemon_config.h"
#include "vri/hook_door.h"
#include "vri/libvirt_sync.h"
#include "vri/metrics_server.h"
#include "vri/node_manager.h"
#include "vri/protobuf_log_route.h"
#include "vri/state_directory.h"
#include "vri/usage_sampler.h"
#include "vri/vri_service.h"

namespace vri {

class Daemon : public ConfigControl {
 public:
  // `fs` (the kernel's cgroupfs in production, a fixture in tests) and `clock`
  // (what the daemon waits and times out by) must outlive the daemon;
  // `topology` overrides config.topology when given.
  // `systemd`, when given, stands in for the system bus (tests, benchmarks) and must outlive it too.
  static Result<std::unique_ptr<Daemon>> start(const DaemonConfig& config, CgroupFs& fs, Logger& log,
                                               std::shared_ptr<const Topology> topology = nullptr,
                                               const Clock& clock = steadyClock(), SystemdUnits* systemd = nullptr);
  ~Daemon() override;
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // SIGHUP: applies what may change at run time (applyConfiguration, logged) and names what needs a
  // restart.
  void reload(const DaemonConfig& config);
  // How vrid's configuration is read again (vrid_main: the file and the flags it started with), for
  // ApplyConfig and DiffConfig of the file; without one they are refused.
  using ConfigReader = std::function<Result<DaemonConfig>(std::string& origin)>;
  void setConfigReader(ConfigReader reader);

  // ConfigControl (daemon_reload.cc).
  Result<DaemonConfig> readConfiguration(std::string& origin) override;
  std::map<std::string, std::string> runningOptions() override;
  Result<ConfigDiff> applyConfiguration(const DaemonConfig& next, bool dryRun) override;
  // SIGTERM: refuses new deciding calls, lets those in flight finish (up to
  // `grace`), ends watches, closes the sockets without waiting for idle
  // connections, and removes them. Idempotent.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(5));

  NodeManager& node() { return *node_; }
  // Null when usage is not sampled.
  const UsageSampler* usage() const { return usage_.get(); }
  const CallMetrics& callMetrics() const { return callMetrics_; }
  // The metrics endpoint's port; 0 when there is none.
  int metricsPort() const { return metrics_ ? metrics_->port() : 0; }
  // What the ledger could not take back at start (kept out, dropped), as logged.
  const std::vector<std::string>& loadProblems() const { return ledger_->loadProblems(); }

 private:
  Daemon(const DaemonConfig& config, CgroupFs& fs, Logger& log, const Clock& clock)
      : config_(config), log_(log), fs_(fs), clock_(clock), events_(clock), calls_(clock), clients_(clock) {}
  // The usage sampler's thread, unless usage_interval_ms is 0.
  Result<void> startUsage(CgroupVersion version);
  Result<void> serve();
  void reconcileLoop();
  // The options a reload may change, from `next`; the others that differ are named for a restart.
  void applyReloadable(const DaemonConfig& next) VRI_REQUIRES(configMutex_);
  // libvirt told of the VMs a policy change moved (their live pins), without waiting for it.
  void pinMovedVms(const ConfigChangePlan& plan);

  // What runs: the file's options with the ledger's placement policy (applied_policy.h). Changed by
  // a reload or an apply, under configMutex_; read without it only by what runs before the services
  // serve or never changes at run time (the sockets, the state directory, usage).
  Mutex configMutex_;
  ConfigReader configReader_ VRI_GUARDED_BY(configMutex_);
  DaemonConfig config_;
  // Held for the daemon's life, and released last.
  std::unique_ptr<StateDirectory> stateDir_;
  std::unique_ptr<SocketClaim> readOnlyClaim_, adminClaim_, hookClaim_;
  Logger& log_;
  CgroupFs& fs_;
  const Clock& clock_;
  // Under systemd: the bus, and the cgroupfs that sets unit properties beside the files (CgroupSync's).
  std::unique_ptr<SystemdUnits> ownSystemd_;
  std::unique_ptr<SystemdCgroupFs> systemdFs_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<CgroupSync> sync_;
  EventHub events_;
  CallGate calls_;         // before the services, which count their calls in it
  LivePinsSlot livePins_;  // before the services, which take moved VMs' pins to libvirt through it
  std::unique_ptr<NodeManager> node_;
  CallMetrics callMetrics_;                        // before the services, which count their calls in it
  std::unique_ptr<UsageSampler> usage_;            // null with usage_interval_ms = 0
  std::unique_ptr<RateLimitedLog> refusals_;       // every refused call, one line each, rate-limited
  std::unique_ptr<ProtobufLogRoute> protobufLog_;  // protobuf's own lines, through refusals_
  ClientVersions clients_;                         // which clients called, in which version
  std::unique_ptr<VriService> readOnlyService_, adminService_;
  std::unique_ptr<grpc::Server> readOnlyServer_, adminServer_;
  std::unique_ptr<HookDoor> hookDoor_;      // after adminService_, which it calls: closed first
  std::unique_ptr<LibvirtSync> libvirt_;    // null without libvirt_uri
  std::unique_ptr<MetricsServer> metrics_;  // null without metrics_port

  Mutex loopMutex_;
  std::condition_variable_any loopWake_;
  bool stopping_ VRI_GUARDED_BY(loopMutex_) = false;
  int reconcileIntervalSeconds_ VRI_GUARDED_BY(loopMutex_) = 0;
  uint64_t loopWakeups_ VRI_GUARDED_BY(loopMutex_) = 0;  // a reload starts the interval again
  std::thread reconcileThread_;
  bool shutDown_ = false;
};

}  // namespace vri
