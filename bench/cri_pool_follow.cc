// How long containerd takes to agree with vrid when the shared pool changes:
// N running shared (Burstable) containers through vri-cri-shim, then a dedicated VM
// admitted through vrid's API takes a CPU from the pool, and released again;
// timed from vrid's answer until containerd's ContainerStatus shows the new
// cpuset for every container. vrid has written the kernel before it answers.
//
//   cri_pool_follow [--containerd=/var/tmp/vri-containerd/run/containerd.sock]
//                   [--vrid=build/vri/vrid] [--shim=build/kubelet-bridge/vri-cri-shim]
//                   [--containers=1,100] [--rounds=5]
//
// Needs root, 2 or more CPUs and the test containerd (tests/containerd/containerd-fixture.sh up).
// The last lines are one JSON object per container count.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kubelet-bridge/cri_client.h"
#include "proto/vri.grpc.pb.h"

namespace {

namespace cri = ::runtime::v1;
using namespace vri::cri_client;
using Clock = std::chrono::steady_clock;

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::fopen(log.c_str(), "a");
    if (out != nullptr) {
      dup2(fileno(out), 1);
      dup2(fileno(out), 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

bool waitFor(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Milliseconds until every container's status shows `cpus` (-1: not within 30 s).
double untilAgreed(CriClient& client, const std::vector<std::string>& ids, const std::string& cpus,
                   Clock::time_point since) {
  const auto end = since + std::chrono::seconds(30);
  size_t agreed = 0;
  while (Clock::now() < end) {
    for (; agreed < ids.size(); ++agreed) {  // containers agree for good once they do: no need to ask again
      cri::ContainerStatusResponse status;
      if (!client.status(ids[agreed], &status).ok() || status.status().resources().linux().cpuset_cpus() != cpus) break;
    }
    if (agreed == ids.size()) return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string containerd = "/var/tmp/vri-containerd/run/containerd.sock", vrid = "build/vri/vrid",
              shim = "build/kubelet-bridge/vri-cri-shim", counts = "1,100";
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--containerd="))
      containerd = arg.substr(13);
    else if (arg.starts_with("--vrid="))
      vrid = arg.substr(7);
    else if (arg.starts_with("--shim="))
      shim = arg.substr(7);
    else if (arg.starts_with("--containers="))
      counts = arg.substr(13);
    else if (arg.starts_with("--rounds="))
      rounds = std::stoi(arg.substr(9));
    else {
      std::fprintf(stderr,
                   "usage: cri_pool_follow [--containerd=SOCK] [--vrid=BINARY] [--shim=BINARY] "
                   "[--containers=1,100] [--rounds=N]\n");
      return 2;
    }
  }
  const std::string dir = "/tmp/vri-pool-follow-" + std::to_string(getpid()),
                    root = "vri-pool-follow-" + std::to_string(getpid());
  std::filesystem::create_directories(dir + "/run");
  {
    std::FILE* conf = std::fopen((dir + "/vrid.conf").c_str(), "w");
    if (conf) std::fclose(conf);
  }
  const pid_t vrid_pid = spawn(
      {vrid, "--config=" + dir + "/vrid.conf", "--topology=live", "--state-dir=" + dir + "/state",
       "--socket=" + dir + "/run/vri.sock", "--admin-socket=" + dir + "/run/admin.sock",
       "--kubelet-cgroup-root=/" + root, "--machine-partition=" + root + "/machine", "--libvirt-layout=no-systemd",
       "--libvirt-uri=", "--vm-memory-overhead=0", "--reconcile-interval=0", "--log-level=warning"},
      dir + "/vrid.log");
  int status = waitFor(dir + "/run/admin.sock") ? 0 : 1;
  const pid_t shim_pid =
      spawn({shim, "--listen=" + dir + "/cri.sock", "--containerd=" + containerd, "--vrid=" + dir + "/run/admin.sock"},
            dir + "/shim.log");
  if (status == 0 && !waitFor(dir + "/cri.sock")) status = 1;
  CriClient client(dir + "/cri.sock");
  auto admin =
      vri::v1::Vri::NewStub(grpc::CreateChannel("unix:" + dir + "/run/admin.sock", grpc::InsecureChannelCredentials()));

  std::vector<std::string> json;
  std::stringstream list(counts);
  std::string item;
  int pod_number = 0;
  while (status == 0 && std::getline(list, item, ',')) {
    const int n = std::stoi(item);
    const std::string uid = root + "-" + std::to_string(++pod_number);
    const cri::PodSandboxConfig pod = sandboxConfig(uid, "follow" + std::to_string(n),
                                                    podCgroupParent("/" + root + "/kubepods", PodQos::kBurstable, uid));
    std::string sandbox;
    if (!client.runPodSandbox(pod, &sandbox).ok()) status = 1;
    std::vector<std::string> ids;
    for (int i = 0; status == 0 && i < n; ++i) {
      std::string id;
      const grpc::Status created = client.createContainer(
          sandbox, pod, containerConfig(pod, "c" + std::to_string(i), kubeletResources(10, 0, 0)), &id);
      const grpc::Status started = created.ok() ? client.startContainer(id) : created;
      if (!started.ok()) {
        std::fprintf(stderr, "cri_pool_follow: creating and starting: %s\n", started.error_message().c_str());
        status = 1;
      }
      ids.push_back(id);  // running: each update is runc's as well as containerd's
    }
    cri::ContainerStatusResponse first;
    const std::string wide =
        status == 0 && client.status(ids.front(), &first).ok() ? first.status().resources().linux().cpuset_cpus() : "";
    std::vector<double> narrow_ms, widen_ms;
    std::string narrow;
    for (int r = 0; status == 0 && r < rounds; ++r) {
      grpc::ClientContext admit_context;
      vri::v1::AdmitVmRequest vm;
      vm.set_uuid("8f0c0d01-0000-4000-8000-00000000000" + std::to_string(r % 10));
      vm.set_name("follow");
      vm.set_vcpus(1);
      vm.set_cpu_policy(vri::v1::DEDICATED);
      vm.set_memory_bytes(64 << 20);
      vri::v1::VmAllocation placed;
      if (!admin->AdmitVm(&admit_context, vm, &placed).ok()) {
        status = 1;
        break;
      }
      const auto admitted = Clock::now();
      grpc::ClientContext node_context;
      vri::v1::Node node;
      admin->GetNode(&node_context, vri::v1::GetNodeRequest(), &node);
      narrow = node.shared_cpus();
      narrow_ms.push_back(untilAgreed(client, ids, narrow, admitted));
      grpc::ClientContext release_context;
      vri::v1::ReleaseVmRequest release;
      release.set_uuid(vm.uuid());
      vri::v1::Released released;
      if (!admin->ReleaseVm(&release_context, release, &released).ok()) {
        status = 1;
        break;
      }
      widen_ms.push_back(untilAgreed(client, ids, wide, Clock::now()));
      if (narrow_ms.back() < 0 || widen_ms.back() < 0) status = 1;
    }
    std::printf(
        "%4d shared containers: pool %s -> %s, containerd agrees after %.1f ms (median of %d); back to %s after %.1f "
        "ms\n",
        n, wide.c_str(), narrow.c_str(), median(narrow_ms), rounds, wide.c_str(), median(widen_ms));
    char line[256];
    std::snprintf(line, sizeof line, "{\"containers\":%d,\"rounds\":%d,\"narrow_ms_p50\":%.1f,\"widen_ms_p50\":%.1f}",
                  n, rounds, median(narrow_ms), median(widen_ms));
    json.push_back(line);
    client.stopPodSandbox(sandbox);
    client.removePodSandbox(sandbox);
  }

  kill(shim_pid, SIGTERM);
  waitpid(shim_pid, nullptr, 0);
  kill(vrid_pid, SIGTERM);
  waitpid(vrid_pid, nullptr, 0);
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup")) {
    std::error_code ec;
    const std::filesystem::path top = hierarchy.path() / root;
    if (!std::filesystem::exists(top, ec)) continue;
    std::vector<std::filesystem::path> dirs;  // deepest first: cgroups refuse rmdir with children
    for (const auto& e : std::filesystem::recursive_directory_iterator(top, ec))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.rbegin(), dirs.rend());
    for (const auto& d : dirs) rmdir(d.c_str());
    rmdir(top.c_str());
  }
  if (status != 0)
    std::fprintf(stderr, "cri_pool_follow: failed; logs in %s\n", dir.c_str());
  else
    std::filesystem::remove_all(dir);
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return status;
}
