// vri-cri-shim: the CRI endpoint kubelet talks to, in front of containerd's.
//
//   vri-cri-shim [--listen=/run/vri/cri.sock] [--containerd=/run/containerd/containerd.sock]
//                [--vrid=/run/vri/admin.sock] [--vrid-timeout-ms=2000] [--workers=4]
//                [--pod-resources=/var/lib/kubelet/pod-resources/kubelet.sock]
//
// Pod and container lifecycle calls take their allocations from vrid
// (kubelet-bridge/cri-shim/cri_shim.h); every other call passes through to containerd
// unchanged (kubelet-bridge/cri-shim/generic_proxy.h), with message limits above
// kubelet's 16 MiB both ways. What it needs to know of the node (its cgroup
// version, its memory nodes) it asks vrid. A pod kubelet has stopped and no longer lists on its
// pod-resources socket is released then, not at its sandbox's removal (stopped_pod_releaser.h;
// --pod-resources= turns that off). SIGTERM or SIGINT stops it.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <thread>

#include "base/unix_socket.h"
#include "base/version.h"
#include "kubelet-bridge/cri-shim/cri_shim.h"
#include "kubelet-bridge/cri-shim/generic_proxy.h"
#include "kubelet-bridge/grpc_runtime_client.h"
#include "kubelet-bridge/grpc_vrid_client.h"
#include "kubelet-bridge/kubelet_pod_resources.h"
#include "kubelet-bridge/kubelet_side_claim.h"
#include "kubelet-bridge/program_flags.h"
#include "kubelet-bridge/program_log.h"
#include "kubelet-bridge/shared_pool_follower.h"
#include "kubelet-bridge/vrid_connection.h"
#include "proto/unix_channel.h"

namespace {

constexpr int kMessageLimit = 64 << 20;

void logLine(const std::string& line) { vri::logProgramLine("vri-cri-shim", line); }

// `quickReconnect`: vrid restarts in well under a second; a call waits for it
// (within its deadline) instead of failing on gRPC's default back-off of up to 2 minutes.
// vrid learns from the user agent which shim version calls it.
std::shared_ptr<grpc::Channel> channelTo(const std::string& socket, bool quickReconnect = false) {
  return vri::unixChannel(socket,
                          {.program = "vri-cri-shim", .quickReconnect = quickReconnect, .messageLimit = kMessageLimit});
}

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-cri-shim")) return 0;
  std::string listen = "/run/vri/cri.sock", containerd = "/run/containerd/containerd.sock",
              vrid = "/run/vri/admin.sock", podResources = vri::kKubeletPodResourcesSocket, cgroupVersion;
  int timeout_ms = 2000, workers = 4;
  CLI::App app{"The CRI endpoint kubelet talks to, in front of containerd's", "vri-cri-shim"};
  const CLI::Validator absolute = vri::program_flags::absoluteSocketPath();
  app.add_option("--listen", listen, "the socket kubelet calls")->capture_default_str()->check(absolute);
  app.add_option("--containerd", containerd, "containerd's CRI socket")->capture_default_str()->check(absolute);
  app.add_option("--vrid", vrid, "vrid's admin socket")->capture_default_str()->check(absolute);
  vri::program_flags::addPodResources(app, podResources);
  app.add_option("--vrid-timeout-ms", timeout_ms, "the most a call waits for vrid")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600000));  // at most an hour
  app.add_option("--workers", workers, "threads for calls upstream")->capture_default_str()->check(CLI::Range(1, 64));
  // Older units pass it; vrid is the one that knows the node's cgroups now.
  app.add_option("--cgroup-version", cgroupVersion, "ignored: vrid reports the node's cgroup version")->group("");
  if (const auto exit = vri::program_flags::parse(app, argc, argv)) return *exit;
  if (!cgroupVersion.empty()) logLine("--cgroup-version is ignored: vrid reports the node's cgroup version");

  // The socket appears with this mask's mode (0600): nobody but root connects, ever,
  // since whoever can create containers through it can take any CPU.
  ::umask(077);
  // The listening path first: a second shim on it stops here, before it follows
  // the pool or adopts anything, and never removes a socket it did not create.
  auto claim = vri::SocketClaim::take(listen);
  if (!claim.ok()) {
    std::fprintf(stderr, "vri-cri-shim: --listen: %s\n", claim.error().message().c_str());
    return 1;
  }

  // One placer of kubelet's pods per vrid: not beside a vri-nri-plugin (kubelet_side_claim.h).
  auto placer = vri::KubeletSideClaim::take(vrid, "vri-cri-shim");
  if (!placer.ok()) {
    std::fprintf(stderr, "vri-cri-shim: %s\n", placer.error().message().c_str());
    return 1;
  }

  // Signals are taken by sigwait below, on this thread only.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  vri::GrpcRuntimeClient runtime(channelTo(containerd));
  vri::GrpcVridClient vrid_client(channelTo(vrid, true));
  vri::GrpcRuntimeClient follower_runtime(channelTo(containerd));  // its own connections: kubelet's calls first
  vri::GrpcVridClient follower_vrid(channelTo(vrid, true));
  vri::GrpcVridClient releaser_vrid(channelTo(vrid, true));
  vri::KubeletPodResources kubelet_pods(podResources);
  vri::StoppedPodReleaserOptions releasing;
  releasing.log = logLine;
  vri::StoppedPodReleaser releaser(releaser_vrid, kubelet_pods, releasing);
  if (!podResources.empty()) releaser.start();
  vri::CriShimOptions options;
  options.vridTimeout = std::chrono::milliseconds(timeout_ms);
  options.releaser = podResources.empty() ? nullptr : &releaser;
  options.log = logLine;
  vri::WorkerPool pool(workers);
  vri::CriShim shim(runtime, vrid_client, options);
  vri::GenericProxy proxy(channelTo(containerd), shim.handlers(), &pool, kMessageLimit);
  vri::SharedPoolFollowerOptions following;
  following.log = logLine;
  following.kubeletCalls = &proxy.handledCalls();
  vri::SharedPoolFollower follower(follower_vrid, follower_runtime, following);
  vri::VridConnectionOptions connecting;
  connecting.log = logLine;
  vri::VridConnection connection(follower_vrid, follower_runtime, follower, connecting);
  connection.start();

  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + listen, grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&proxy);
  builder.SetMaxReceiveMessageSize(kMessageLimit);
  builder.SetMaxSendMessageSize(kMessageLimit);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "vri-cri-shim: cannot serve on %s\n", listen.c_str());
    return 1;
  }
  if (auto bound = (*claim)->bound(); !bound.ok()) {
    std::fprintf(stderr, "vri-cri-shim: %s\n", bound.error().message().c_str());
    return 1;
  }
  if (auto access = vri::setSocketAccess(listen, 0600, ""); !access.ok()) {
    std::fprintf(stderr, "vri-cri-shim: %s\n", access.error().message().c_str());
    return 1;
  }
  std::printf("vri-cri-shim: serving %s, forwarding to %s, allocations from %s; ready\n", listen.c_str(),
              containerd.c_str(), vrid.c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&stop, &received);
  // Calls that change vrid or containerd finish (up to 5 s); the rest, idle
  // connections and open streams included, are cancelled at once.
  const auto patience = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (proxy.handledCallsInFlight() > 0 && std::chrono::steady_clock::now() < patience)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  claim->reset();  // removes the socket this shim bound, if it is still that one
  return 0;
}
