// vri-cri-shim: the CRI endpoint kubelet talks to, in front of containerd's.
//
//   vri-cri-shim [--listen=/run/vri/cri.sock] [--containerd=/run/containerd/containerd.sock]
//
// Every call passes through to containerd unchanged (kubelet-bridge/generic_proxy.h),
// with message limits above kubelet's 16 MiB both ways. SIGTERM or SIGINT stops it.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "kubelet-bridge/generic_proxy.h"

namespace {

constexpr int kMessageLimit = 64 << 20;

int usage(const std::string& why) {
  std::fprintf(stderr, "vri-cri-shim: %s\nusage: vri-cri-shim [--listen=PATH] [--containerd=PATH]\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "/run/vri/cri.sock", containerd = "/run/containerd/containerd.sock";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--listen=")) {
      listen = arg.substr(9);
    } else if (arg.starts_with("--containerd=")) {
      containerd = arg.substr(13);
    } else {
      return usage("unknown argument " + arg);
    }
  }
  if (listen.empty() || listen[0] != '/' || containerd.empty() || containerd[0] != '/')
    return usage("socket paths must be absolute");

  // Signals are taken by sigwait below, on this thread only.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMessageLimit);
  args.SetMaxSendMessageSize(kMessageLimit);
  vri::GenericProxy proxy(grpc::CreateCustomChannel("unix:" + containerd, grpc::InsecureChannelCredentials(), args));

  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(listen).parent_path(), ec);
  std::filesystem::remove(listen, ec);  // a socket left by an earlier run
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
  std::printf("vri-cri-shim: serving %s, forwarding to %s; ready\n", listen.c_str(), containerd.c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&stop, &received);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  server->Wait();
  std::filesystem::remove(listen, ec);
  return 0;
}
