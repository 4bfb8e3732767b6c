// The shim's pass-through cost: Version, ContainerStatus and ListContainers
// (with 100 containers) through vri-cri-shim and straight to containerd,
// interleaved call by call, plus a second straight channel (A/A) for the noise.
//
//   cri_passthrough [--containerd=/var/tmp/vri-containerd/run/containerd.sock]
//                   [--shim=build/kubelet-bridge/cri-shim/vri-cri-shim] [--calls=1000] [--containers=100]
//
// Needs root and a running containerd with the test image
// (tests/containerd/containerd-fixture.sh up). Targets: p50 overhead <= 0.3 ms;
// p99 difference <= max(1 ms, 2 x the A/A p99 spread). The last lines are one
// JSON object per method.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/cri_bench_support.h"
#include "kubelet-bridge/cri.grpc.pb.h"

namespace {

namespace cri = ::runtime::v1;
using Clock = std::chrono::steady_clock;

std::unique_ptr<cri::RuntimeService::Stub> stubFor(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetInt("vri.bench.channel", rand());  // a channel (and connection) of its own
  return cri::RuntimeService::NewStub(
      grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args));
}

std::unique_ptr<grpc::ClientContext> context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return c;
}

bool check(const grpc::Status& status, const char* what) {
  if (!status.ok()) std::fprintf(stderr, "cri_passthrough: %s: %s\n", what, status.error_message().c_str());
  return status.ok();
}

struct Path {
  std::string name;
  std::unique_ptr<cri::RuntimeService::Stub> stub;
  std::vector<double> ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::string containerd = "/var/tmp/vri-containerd/run/containerd.sock",
              shim = "build/kubelet-bridge/cri-shim/vri-cri-shim";
  int calls = 1000, containers = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--containerd="))
      containerd = arg.substr(13);
    else if (arg.starts_with("--shim="))
      shim = arg.substr(7);
    else if (arg.starts_with("--calls="))
      calls = std::stoi(arg.substr(8));
    else if (arg.starts_with("--containers="))
      containers = std::stoi(arg.substr(13));
    else {
      std::fprintf(stderr, "usage: cri_passthrough [--containerd=SOCK] [--shim=BINARY] [--calls=N] [--containers=N]\n");
      return 2;
    }
  }
  const std::string dir = "/tmp/vri-cri-bench-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string socket = dir + "/cri.sock";
  const pid_t shim_pid = fork();
  if (shim_pid == 0) {
    execl(shim.c_str(), shim.c_str(), ("--listen=" + socket).c_str(), ("--containerd=" + containerd).c_str(),
          ("--vrid=" + dir + "/no-vrid.sock").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(socket); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));

  // One best-effort pod with `containers` containers (created: ContainerStatus and the list need no process).
  const std::string root = "vri-cri-bench-" + std::to_string(getpid()), uid = root + "-pod";
  auto direct = stubFor(containerd);
  cri::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name("bench");
  pod.mutable_metadata()->set_uid(uid);
  pod.mutable_metadata()->set_namespace_("default");
  pod.mutable_linux()->set_cgroup_parent("/" + root + "/kubepods/besteffort/pod" + uid);
  pod.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(cri::NODE);
  cri::RunPodSandboxRequest run;
  *run.mutable_config() = pod;
  cri::RunPodSandboxResponse sandbox;
  int status = 0;
  if (!check(direct->RunPodSandbox(context().get(), run, &sandbox), "RunPodSandbox")) status = 1;
  std::string container_id;
  for (int i = 0; status == 0 && i < containers; ++i) {
    cri::CreateContainerRequest create;
    create.set_pod_sandbox_id(sandbox.pod_sandbox_id());
    create.mutable_config()->mutable_metadata()->set_name("c" + std::to_string(i));
    create.mutable_config()->mutable_image()->set_image("localhost/vri/pause:1.0");
    create.mutable_config()->add_command("/sleeper");
    *create.mutable_sandbox_config() = pod;
    cri::CreateContainerResponse created;
    if (!check(direct->CreateContainer(context().get(), create, &created), "CreateContainer")) status = 1;
    container_id = created.container_id();
  }

  std::vector<std::pair<std::string, std::function<grpc::Status(cri::RuntimeService::Stub&)>>> methods = {
      {"Version",
       [](cri::RuntimeService::Stub& s) {
         cri::VersionResponse r;
         return s.Version(context().get(), cri::VersionRequest(), &r);
       }},
      {"ContainerStatus",
       [&](cri::RuntimeService::Stub& s) {
         cri::ContainerStatusRequest q;
         q.set_container_id(container_id);
         cri::ContainerStatusResponse r;
         return s.ContainerStatus(context().get(), q, &r);
       }},
      {"ListContainers",
       [](cri::RuntimeService::Stub& s) {
         cri::ListContainersResponse r;
         return s.ListContainers(context().get(), cri::ListContainersRequest(), &r);
       }},
  };
  std::vector<std::string> json;
  std::printf("%-16s %10s %10s %10s %12s %12s %12s %12s %s\n", "method", "direct p50", "A/A p50", "shim p50",
              "overhead p50", "direct p99", "shim p99", "A/A spread", "targets");
  for (auto& [name, call] : methods) {
    if (status != 0) break;
    std::vector<Path> paths;
    paths.push_back({"direct", stubFor(containerd), {}});
    paths.push_back({"direct2", stubFor(containerd), {}});
    paths.push_back({"shim", stubFor(socket), {}});
    for (Path& p : paths) {  // warm up: connections, containerd's caches
      for (int i = 0; i < 20; ++i) call(*p.stub);
    }
    for (int i = 0; i < calls && status == 0; ++i) {
      for (int k = 0; k < 3; ++k) {  // the order rotates so no path always goes first
        Path& p = paths[static_cast<size_t>((i + k) % 3)];
        const auto start = Clock::now();
        if (!check(call(*p.stub), name.c_str())) status = 1;
        p.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    }
    if (status != 0) break;
    const double d50 = vri::bench::percentile(paths[0].ms, 0.5), a50 = vri::bench::percentile(paths[1].ms, 0.5),
                 s50 = vri::bench::percentile(paths[2].ms, 0.5);
    const double d99 = vri::bench::percentile(paths[0].ms, 0.99), a99 = vri::bench::percentile(paths[1].ms, 0.99),
                 s99 = vri::bench::percentile(paths[2].ms, 0.99);
    const double overhead = s50 - d50, p99_diff = s99 - d99, spread = std::abs(a99 - d99);
    const bool met = overhead <= 0.3 && p99_diff <= std::max(1.0, 2 * spread);
    std::printf("%-16s %10.3f %10.3f %10.3f %12.3f %12.3f %12.3f %12.3f %s\n", name.c_str(), d50, a50, s50, overhead,
                d99, s99, spread, met ? "met" : "MISSED");
    char line[512];
    std::snprintf(line, sizeof line,
                  "{\"method\":\"%s\",\"calls\":%d,\"containers\":%d,\"direct_ms_p50\":%.3f,\"aa_ms_p50\":%.3f,"
                  "\"shim_ms_p50\":%.3f,\"overhead_ms_p50\":%.3f,\"direct_ms_p99\":%.3f,\"aa_ms_p99\":%.3f,"
                  "\"shim_ms_p99\":%.3f,\"p99_diff_ms\":%.3f,\"aa_p99_spread_ms\":%.3f,\"targets_met\":%s}",
                  name.c_str(), calls, containers, d50, a50, s50, overhead, d99, a99, s99, p99_diff, spread,
                  met ? "true" : "false");
    json.push_back(line);
  }

  if (!sandbox.pod_sandbox_id().empty()) {
    cri::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(sandbox.pod_sandbox_id());
    cri::StopPodSandboxResponse stopped;
    check(direct->StopPodSandbox(context().get(), stop, &stopped), "StopPodSandbox");
    cri::RemovePodSandboxRequest remove;
    remove.set_pod_sandbox_id(sandbox.pod_sandbox_id());
    cri::RemovePodSandboxResponse removed;
    check(direct->RemovePodSandbox(context().get(), remove, &removed), "RemovePodSandbox");
  }
  vri::bench::stopChild(shim_pid);
  vri::bench::removeCgroupRoot(root);
  std::filesystem::remove_all(dir);
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return status;
}
