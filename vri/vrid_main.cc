// vrid: the process. Signals are taken by one thread with sigwait, so no
// handler runs inside gRPC's threads.
#include <absl/synchronization/mutex.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "base/version.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "vri/daemon.h"
#include "vri/kubelet_config.h"

namespace {

// sysexits.h's EX_CONFIG: a refusal only the operator can lift (a configuration that does not parse,
// kubelet's settings or checkpoints that say kubelet's managers hold the node). vrid.service names it
// in RestartPreventExitStatus=, so systemd does not start vrid again every RestartSec= to be refused
// the same way; `systemctl restart vrid` after the fix does.
constexpr int kExitConfiguration = 78;

int fail(const std::string& message, int status = 1) {
  std::fprintf(stderr, "vrid: %s\n", message.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  // Block the signals before any thread exists, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A peer that goes away while vrid writes to it is an error on that write, not the end of vrid:
  // libvirt's client writes its socket with write(2), and libvirtd stopping mid-call raised SIGPIPE,
  // which ended vrid without a word. (systemd ignores SIGPIPE for its services; vrid started any other
  // way did not.)
  ::signal(SIGPIPE, SIG_IGN);
  // gRPC locks abseil's mutexes many times per call. Debian builds abseil without NDEBUG, which leaves its
  // deadlock detection on: every lock and unlock then goes through one process-wide graph behind a lock of
  // its own, which every serving thread contends for. Off before the first thread starts.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Sockets and the ledger are created private; vrid opens up what it means to.
  ::umask(077);
  // The usage sampler keeps 2-3 files open per tenant: as many descriptors as the hard limit allows
  // (systemd's default soft limit is 1,024, its hard limit 524,288). Files beyond it are read by path.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }

  const auto command = vri::parseDaemonCommand(std::vector<std::string>(argv + 1, argv + argc));
  if (!command.ok()) return fail(command.error().message());
  if (command->help) {
    std::cout << vri::daemonUsage();
    return 0;
  }
  if (command->version) {
    std::cout << vri::versionLine("vrid") << "\n";
    return 0;
  }
  auto config = vri::loadDaemonConfig(*command);
  if (!config.ok()) return fail(config.error().message(), kExitConfiguration);
  if (command->printConfig) {
    std::cout << vri::formatConfig(*config);
    return 0;
  }
  // Daemon::start checks these again, among the things that may pass on a later try.
  for (const auto& check : {vri::checkKubeletConfig, vri::checkKubeletCheckpoints}) {
    if (const vri::Result<void> agreed = check(*config); !agreed.ok())
      return fail(agreed.error().message(), kExitConfiguration);
  }
  vri::Logger log(config->logLevel);
  auto fs = vri::KernelCgroupFs::create(config->cgroupRoot);
  if (!fs.ok()) return fail(fs.error().message());
  auto daemon = vri::Daemon::start(*config, *fs, log);
  if (!daemon.ok()) return fail(daemon.error().message());
  // The file and the flags vrid started with, read again: SIGHUP's way, and `vrictl config apply`'s.
  const auto reread = [&command](std::string& origin) {
    origin = command->configPath;
    return vri::loadDaemonConfig(*command);
  };
  (*daemon)->setConfigReader(reread);
  log.info("ready");

  for (;;) {
    int received = 0;
    if (sigwait(&signals, &received) != 0) continue;
    if (received == SIGHUP) {
      std::string origin;
      auto reloaded = reread(origin);
      if (!reloaded.ok()) {
        log.error("reload refused, keeping the running configuration: " + reloaded.error().message());
        continue;
      }
      (*daemon)->reload(*reloaded);
      continue;
    }
    log.info(std::string("received ") + (received == SIGTERM ? "SIGTERM" : "SIGINT"));
    (*daemon)->shutdown();
    return 0;
  }
}
