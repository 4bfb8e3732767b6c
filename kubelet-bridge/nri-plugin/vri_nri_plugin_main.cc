// vri-nri-plugin: VRI as an NRI plugin of containerd 2.x (kubelet-bridge/nri-plugin/nri_plugin.h).
//
//   vri-nri-plugin [--nri-socket=/var/run/nri/nri.sock] [--vrid=/run/vri/admin.sock]
//                  [--name=vri] [--index=50] [--vrid-timeout-ms=1000]
//                  [--cri-socket=/run/containerd/containerd.sock]
//                  [--pod-resources=/var/lib/kubelet/pod-resources/kubelet.sock]
//
// It connects to the runtime's NRI socket, registers, synchronizes vrid's ledger with what the
// runtime runs, releases what the runtime removes, and connects again whenever the runtime
// restarts. A pod kubelet has stopped and no longer lists on its pod-resources socket is released
// then, not at its sandbox's removal (stopped_pod_releaser.h; --pod-resources= turns that off).
// SIGTERM or SIGINT stops it.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

#include "base/version.h"
#include "kubelet-bridge/grpc_runtime_client.h"
#include "kubelet-bridge/grpc_vrid_client.h"
#include "kubelet-bridge/kubelet_pod_resources.h"
#include "kubelet-bridge/kubelet_side_claim.h"
#include "kubelet-bridge/nri-plugin/nri_plugin.h"
#include "kubelet-bridge/program_flags.h"
#include "kubelet-bridge/program_log.h"
#include "proto/unix_channel.h"

namespace {

void logLine(const std::string& line) { vri::logProgramLine("vri-nri-plugin", line); }

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-nri-plugin")) return 0;
  vri::NriPluginOptions options;
  options.log = logLine;
  std::string vrid = "/run/vri/admin.sock";
  std::string criSocket;  // none: exit codes only as NRI reports them
  std::string podResources = vri::kKubeletPodResourcesSocket;
  int timeout_ms = static_cast<int>(options.vridTimeout.count());
  CLI::App app{"VRI as an NRI plugin of the container runtime", "vri-nri-plugin"};
  const CLI::Validator absolute = vri::program_flags::absoluteSocketPath();
  app.add_option("--nri-socket", options.socket, "the runtime's NRI socket")->capture_default_str()->check(absolute);
  app.add_option("--vrid", vrid, "vrid's admin socket")->capture_default_str()->check(absolute);
  app.add_option("--name", options.name, "the name the runtime's logs show")
      ->capture_default_str()
      ->check([](const std::string& name) { return name.empty() ? "not empty" : ""; });
  // NRI's plugin index is two digits: the order the runtime calls plugins in.
  app.add_option("--index", options.index, "two digits, as NRI orders plugins")
      ->capture_default_str()
      ->check([](const std::string& index) {
        const bool two_digits = index.size() == 2 && std::isdigit(static_cast<unsigned char>(index[0])) &&
                                std::isdigit(static_cast<unsigned char>(index[1]));
        return two_digits ? "" : "two digits, as NRI orders plugins";
      });
  app.add_option("--vrid-timeout-ms", timeout_ms, "the most a request waits for vrid")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));  // at most an hour
  app.add_option("--cri-socket", criSocket, "the runtime's CRI socket, for the exit codes its NRI does not report")
      ->capture_default_str()
      ->check(absolute);
  vri::program_flags::addPodResources(app, podResources);
  if (const auto exit = vri::program_flags::parse(app, argc, argv)) return *exit;
  options.vridTimeout = std::chrono::milliseconds(timeout_ms);

  // One placer of kubelet's pods per vrid: not beside a vri-cri-shim (kubelet_side_claim.h).
  auto placer = vri::KubeletSideClaim::take(vrid, "vri-nri-plugin");
  if (!placer.ok()) {
    std::fprintf(stderr, "vri-nri-plugin: %s\n", placer.error().message().c_str());
    return 1;
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  // vrid restarts in well under a second: calls wait for it within their deadline.
  vri::GrpcVridClient vrid_client(vri::vridChannel(vrid, "vri-nri-plugin"));
  std::unique_ptr<vri::GrpcRuntimeClient> cri;
  if (!criSocket.empty()) {
    cri = std::make_unique<vri::GrpcRuntimeClient>(vri::unixChannel(criSocket));
    options.cri = cri.get();
  }
  vri::GrpcVridClient releaser_vrid(vri::vridChannel(vrid, "vri-nri-plugin"));
  vri::KubeletPodResources kubelet_pods(podResources);
  vri::StoppedPodReleaserOptions releasing;
  releasing.log = logLine;
  vri::StoppedPodReleaser releaser(releaser_vrid, kubelet_pods, releasing);
  if (!podResources.empty()) {
    releaser.start();
    options.releaser = &releaser;
  }
  vri::NriPlugin plugin(vrid_client, options);
  std::thread sessions([&] { plugin.run(); });
  logLine("connecting to " + options.socket + " as " + options.index + "-" + options.name + "; vrid at " + vrid);
  int signal = 0;
  sigwait(&stop, &signal);
  logLine(std::string("stopping on ") + (signal == SIGTERM ? "SIGTERM" : "SIGINT"));
  plugin.stop();
  sessions.join();
  return 0;
}
