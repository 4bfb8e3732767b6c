// How long containerd takes to agree with vrid when the shared pool changes:
// N running shared (Burstable) containers through vri-cri-shim, then a dedicated VM
// admitted through vrid's API takes a CPU from the pool, and released again;
// timed from vrid's answer until containerd's ContainerStatus shows the new
// cpuset for every container. vrid has written the kernel before it answers.
//
//   cri_pool_follow [--containerd=/var/tmp/vri-containerd/run/containerd.sock]
//                   [--vrid=build/vri/vrid] [--shim=build/kubelet-bridge/cri-shim/vri-cri-shim]
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

#include "bench/cri_bench_support.h"
#include "proto/vri.grpc.pb.h"
#include "tools/cri-client/cri_client.h"

namespace {

namespace cri = ::runtime::v1;
using namespace vri::cri_client;
using Clock = std::chrono::steady_clock;

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
              shim = "build/kubelet-bridge/cri-shim/vri-cri-shim", counts = "1,100";
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
  const pid_t vrid_pid = vri::bench::startVrid(vrid, dir, root);
  int status = vrid_pid > 0 ? 0 : 1;
  const pid_t shim_pid = vri::bench::spawnLogged(
      {shim, "--listen=" + dir + "/cri.sock", "--containerd=" + containerd, "--vrid=" + dir + "/run/admin.sock"},
      dir + "/shim.log");
  if (status == 0 && !vri::bench::waitForPath(dir + "/cri.sock")) status = 1;
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
    const cri::PodSandboxConfig pod =
        sandboxConfig(uid, "follow" + std::to_string(n), podCgroupParent("/" + root, PodQos::kBurstable, uid));
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
        n, wide.c_str(), narrow.c_str(), vri::bench::percentile(narrow_ms, 0.5), rounds, wide.c_str(),
        vri::bench::percentile(widen_ms, 0.5));
    char line[256];
    std::snprintf(line, sizeof line, "{\"containers\":%d,\"rounds\":%d,\"narrow_ms_p50\":%.1f,\"widen_ms_p50\":%.1f}",
                  n, rounds, vri::bench::percentile(narrow_ms, 0.5), vri::bench::percentile(widen_ms, 0.5));
    json.push_back(line);
    client.stopPodSandbox(sandbox);
    client.removePodSandbox(sandbox);
  }

  vri::bench::stopChild(shim_pid);
  vri::bench::stopChild(vrid_pid);
  vri::bench::removeCgroupRoot(root);
  if (status != 0)
    std::fprintf(stderr, "cri_pool_follow: failed; logs in %s\n", dir.c_str());
  else
    std::filesystem::remove_all(dir);
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return status;
}
