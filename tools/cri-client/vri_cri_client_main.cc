// vri-cri-client: runs and removes pods through a CRI endpoint the way kubelet
// does (tools/cri-client/cri_client.h), to see vri-cri-shim at work without a
// cluster. One pod = a host-network sandbox and one container `app` of the
// test image.
//
//   vri-cri-client [--socket=/run/vri/cri.sock] run POD --qos=guaranteed|burstable|besteffort
//                  [--cpu=REQUEST[:LIMIT]] [--memory=BYTES] [--kubelet-cgroup-root=/]
//                  [--cgroup-driver=cgroupfs|systemd] [--args="WORD ..."]
//   vri-cri-client [--socket=...] ps
//   vri-cri-client [--socket=...] pods
//   vri-cri-client [--socket=...] rm POD
//
// CPU amounts are milli-CPU (1000 = one CPU); --kubelet-cgroup-root is kubelet's
// --cgroup-root (vrid's kubelet_cgroup_root). The cgroup parent is named as kubelet
// names it (KubeletNamer): a path under cgroupfs, the pod's slice under systemd
// (kubepods-burstable-pod<uid with _ for ->.slice). --args are the
// container's arguments, split at spaces (the test image's `spin` uses a whole CPU).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/version.h"
#include "cgroup-model/kubelet_namer.h"
#include "tools/cri-client/cri_client.h"

namespace {

using namespace vri::cri_client;

int usage(const std::string& why) {
  std::fprintf(stderr, "vri-cri-client: %s\nRun with --help for more information.\n", why.c_str());
  return 2;
}

int failed(const char* what, const grpc::Status& status) {
  std::fprintf(stderr, "vri-cri-client: %s: %s (%d)\n", what, status.error_message().c_str(),
               static_cast<int>(status.error_code()));
  return 1;
}

std::string newUid() {
  std::ifstream in("/proc/sys/kernel/random/uuid");
  std::string uid;
  std::getline(in, uid);
  return uid;
}

// The container's CPUs as containerd applied them (its OCI spec), whichever way VRI placed it.
std::string cpusetOf(CriClient& client, const std::string& container) { return client.specCpus(container); }

// `run`'s flags, checked by CLI11 as they are parsed.
struct RunFlags {
  std::string qos;                // guaranteed, burstable or besteffort
  std::string cpu = "0";          // REQUEST[:LIMIT], milli-CPU
  std::optional<int64_t> memory;  // bytes; default: 64 MiB, none for BestEffort
  std::string kubeletRoot = "/";
  std::string driver = "cgroupfs";  // or systemd
  std::string args;
};

int run(CriClient& client, const std::string& name, const RunFlags& flags) {
  const PodQos qos = flags.qos == "guaranteed"  ? PodQos::kGuaranteed
                     : flags.qos == "burstable" ? PodQos::kBurstable
                                                : PodQos::kBestEffort;
  const vri::KubeletDriver driver =
      flags.driver == "systemd" ? vri::KubeletDriver::kSystemd : vri::KubeletDriver::kCgroupfs;
  const size_t colon = flags.cpu.find(':');
  int64_t request = 0, limit = 0;
  try {
    request = std::stoll(flags.cpu.substr(0, colon));
    limit = colon == std::string::npos ? (qos == PodQos::kGuaranteed ? request : 0)
                                       : std::stoll(flags.cpu.substr(colon + 1));
  } catch (const std::exception&) {
    return usage("--cpu: REQUEST[:LIMIT] in milli-CPU");
  }
  const int64_t memory = flags.memory.value_or(qos == PodQos::kBestEffort ? 0 : 64LL << 20);
  const std::string uid = newUid();
  // Under systemd kubelet sends the slice's name; systemd knows where it lives.
  const std::string parent = podCgroupParent(flags.kubeletRoot, qos, uid, driver);
  if (parent.empty()) return usage("--kubelet-cgroup-root: not a cgroup path: " + flags.kubeletRoot);
  const cri::PodSandboxConfig pod = sandboxConfig(uid, name, parent);
  std::string sandbox, container;
  if (grpc::Status s = client.runPodSandbox(pod, &sandbox); !s.ok()) return failed("RunPodSandbox", s);
  const cri::LinuxContainerResources resources = kubeletResources(request, limit, memory);
  std::vector<std::string> args;
  std::istringstream words(flags.args);
  for (std::string word; words >> word;) args.push_back(word);
  if (grpc::Status s = client.createContainer(sandbox, pod, containerConfig(pod, "app", resources, args), &container);
      !s.ok())
    return failed("CreateContainer", s);  // the sandbox stays, as kubelet's does: `rm` removes it
  if (grpc::Status s = client.startContainer(container); !s.ok()) return failed("StartContainer", s);
  std::printf("pod default/%s (uid %s): sandbox %.13s, container app %.13s on CPUs %s\n", name.c_str(), uid.c_str(),
              sandbox.c_str(), container.c_str(), cpusetOf(client, container).c_str());
  return 0;
}

int ps(CriClient& client) {
  cri::ListContainersResponse listed;
  if (grpc::Status s = client.listContainers("", &listed); !s.ok()) return failed("ListContainers", s);
  std::printf("%-15s %-24s %-10s %-8s %s\n", "CONTAINER", "POD", "NAME", "STATE", "CPUS");
  for (const cri::Container& c : listed.containers()) {
    const auto pod = c.labels().find("io.kubernetes.pod.name");
    std::printf("%-15.13s %-24s %-10s %-8s %s\n", c.id().c_str(), pod == c.labels().end() ? "-" : pod->second.c_str(),
                c.metadata().name().c_str(), cri::ContainerState_Name(c.state()).substr(10).c_str(),
                cpusetOf(client, c.id()).c_str());
  }
  return 0;
}

// Every sandbox, ready or not: what kubelet has not removed yet.
int pods(CriClient& client) {
  cri::ListPodSandboxResponse listed;
  if (grpc::Status s = client.listPodSandboxes(&listed); !s.ok()) return failed("ListPodSandbox", s);
  std::printf("%-15s %-24s %-36s %s\n", "SANDBOX", "POD", "UID", "STATE");
  for (const cri::PodSandbox& p : listed.items()) {
    std::printf("%-15.13s %-24s %-36s %s\n", p.id().c_str(), p.metadata().name().c_str(), p.metadata().uid().c_str(),
                cri::PodSandboxState_Name(p.state()).substr(8).c_str());
  }
  return 0;
}

// kubelet's order: the containers stopped and the sandbox stopped, then both removed.
int rm(CriClient& client, const std::string& name) {
  cri::ListPodSandboxResponse sandboxes;
  if (grpc::Status s = client.listPodSandboxes(&sandboxes); !s.ok()) return failed("ListPodSandbox", s);
  int removed = 0;
  for (const cri::PodSandbox& sandbox : sandboxes.items()) {
    if (sandbox.metadata().name() != name) continue;
    cri::ListContainersResponse listed;
    if (grpc::Status s = client.listContainers(sandbox.metadata().uid(), &listed); !s.ok())
      return failed("ListContainers", s);
    for (const cri::Container& c : listed.containers()) {
      if (grpc::Status s = client.stopContainer(c.id()); !s.ok()) return failed("StopContainer", s);
    }
    if (grpc::Status s = client.stopPodSandbox(sandbox.id()); !s.ok()) return failed("StopPodSandbox", s);
    for (const cri::Container& c : listed.containers()) {
      if (grpc::Status s = client.removeContainer(c.id()); !s.ok()) return failed("RemoveContainer", s);
    }
    if (grpc::Status s = client.removePodSandbox(sandbox.id()); !s.ok()) return failed("RemovePodSandbox", s);
    ++removed;
  }
  if (removed == 0) {
    std::fprintf(stderr, "vri-cri-client: no pod named %s\n", name.c_str());
    return 1;
  }
  std::printf("pod default/%s removed\n", name.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vri-cri-client")) return 0;
  std::string socket = "/run/vri/cri.sock";
  std::string pod;
  RunFlags flags;
  CLI::App app{"Runs and removes pods through a CRI endpoint the way kubelet does", "vri-cri-client"};
  app.require_subcommand(1);
  app.add_option("--socket", socket, "the CRI endpoint (the shim's, or a runtime's)")->capture_default_str();
  CLI::App* run_command = app.add_subcommand("run", "a host-network pod with one container `app` of the test image");
  run_command->add_option("POD", pod, "the pod's name")->required();
  run_command->add_option("--qos", flags.qos, "guaranteed, burstable or besteffort")
      ->required()
      ->check(CLI::IsMember({"guaranteed", "burstable", "besteffort"}));
  run_command->add_option("--cpu", flags.cpu, "milli-CPU, REQUEST[:LIMIT] (1000 = one CPU)")->capture_default_str();
  run_command->add_option("--memory", flags.memory, "bytes (default: 64 MiB, none for besteffort)")
      ->check(CLI::NonNegativeNumber);
  run_command
      ->add_option("--kubelet-cgroup-root", flags.kubeletRoot,
                   "kubelet's --cgroup-root, where kubepods sits (vrid's kubelet_cgroup_root)")
      ->capture_default_str();
  run_command->add_option("--cgroup-driver", flags.driver, "kubelet's cgroup driver")
      ->capture_default_str()
      ->check(CLI::IsMember({"cgroupfs", "systemd"}));
  run_command->add_option("--args", flags.args, "the container's arguments, split at spaces");
  app.add_subcommand("ps", "the containers");
  app.add_subcommand("pods", "the pods");
  CLI::App* rm_command = app.add_subcommand("rm", "a pod, by name");
  rm_command->add_option("POD", pod, "the pod's name")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help, or a usage error
  }
  CriClient client(socket);
  if (run_command->parsed()) return run(client, pod, flags);
  if (rm_command->parsed()) return rm(client, pod);
  if (app.got_subcommand("ps")) return ps(client);
  return pods(client);
}
