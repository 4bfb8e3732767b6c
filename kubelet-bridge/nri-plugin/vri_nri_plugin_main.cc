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
#include "kubelet-bridge/program_log.h"

namespace {

int usage(const std::string& why) {
  std::fprintf(stderr,
               "vri-nri-plugin: %s\nusage: vri-nri-plugin [--nri-socket=PATH] [--vrid=PATH] [--name=NAME] "
               "[--index=NN] [--vrid-timeout-ms=N] [--cri-socket=PATH] [--pod-resources=PATH]\n",
               why.c_str());
  return 2;
}

void logLine(const std::string& line) { vri::logProgramLine("vri-nri-plugin", line); }

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-nri-plugin")) return 0;
  vri::NriPluginOptions options;
  options.log = logLine;
  std::string vrid = "/run/vri/admin.sock";
  std::string criSocket;  // none: exit codes only as NRI reports them
  std::string podResources = vri::kKubeletPodResourcesSocket;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* flag) { return arg.substr(std::string(flag).size()); };
    if (arg.starts_with("--nri-socket=")) {
      options.socket = value("--nri-socket=");
    } else if (arg.starts_with("--vrid=")) {
      vrid = value("--vrid=");
    } else if (arg.starts_with("--name=")) {
      options.name = value("--name=");
    } else if (arg.starts_with("--index=")) {
      options.index = value("--index=");
    } else if (arg.starts_with("--pod-resources=")) {
      podResources = value("--pod-resources=");
      if (!podResources.empty() && podResources[0] != '/') return usage("--pod-resources: an absolute path, or empty");
    } else if (arg.starts_with("--cri-socket=")) {
      criSocket = value("--cri-socket=");
      if (criSocket.empty() || criSocket[0] != '/') return usage("--cri-socket: an absolute path");
    } else if (arg.starts_with("--vrid-timeout-ms=")) {
      const std::string text = value("--vrid-timeout-ms=");
      int ms = 0;
      try {
        ms = std::stoi(text);
      } catch (const std::exception&) {
      }
      if (ms <= 0 || std::to_string(ms) != text) return usage("--vrid-timeout-ms: a positive number");
      options.vridTimeout = std::chrono::milliseconds(ms);
    } else {
      return usage("unknown argument " + arg);
    }
  }
  if (options.socket.empty() || options.socket[0] != '/' || vrid.empty() || vrid[0] != '/') {
    return usage("socket paths must be absolute");
  }
  // NRI's plugin index is two digits; the name is what the runtime's logs show.
  if (options.index.size() != 2 || !std::isdigit(static_cast<unsigned char>(options.index[0])) ||
      !std::isdigit(static_cast<unsigned char>(options.index[1]))) {
    return usage("--index: two digits, as NRI orders plugins");
  }
  if (options.name.empty()) return usage("--name: not empty");

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

  grpc::ChannelArguments args;
  // vrid restarts in well under a second: calls wait for it within their deadline.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetUserAgentPrefix(vri::clientUserAgent("vri-nri-plugin"));
  vri::GrpcVridClient vrid_client(grpc::CreateCustomChannel("unix:" + vrid, grpc::InsecureChannelCredentials(), args));
  std::unique_ptr<vri::GrpcRuntimeClient> cri;
  if (!criSocket.empty()) {
    cri = std::make_unique<vri::GrpcRuntimeClient>(
        grpc::CreateChannel("unix:" + criSocket, grpc::InsecureChannelCredentials()));
    options.cri = cri.get();
  }
  vri::GrpcVridClient releaser_vrid(
      grpc::CreateCustomChannel("unix:" + vrid, grpc::InsecureChannelCredentials(), args));
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
