// vri-cri-client: runs and removes pods through a CRI endpoint the way kubelet
// does (tools/cri-client/cri_client.h), to see vri-cri-shim at work without a
// cluster. One pod = a host-network sandbox and one container `app` of the
// test image.
//
//   vri-cri-client [--socket=/run/vri/cri.sock] run POD --qos=guaranteed|burstable|besteffort
//                  [--cpu=REQUEST[:LIMIT]] [--memory=BYTES] [--kubepods=/kubepods]
//                  [--cgroup-driver=cgroupfs|systemd] [--args="WORD ..."]
//   vri-cri-client [--socket=...] ps
//   vri-cri-client [--socket=...] pods
//   vri-cri-client [--socket=...] rm POD
//
// CPU amounts are milli-CPU (1000 = one CPU); --kubepods is kubelet's cgroupfs
// parent of the QoS levels (vrid's kubelet_cgroup_root + "/kubepods"). With the
// systemd driver the cgroup parent is the pod's slice, as kubelet names it
// (kubepods-burstable-pod<uid with _ for ->.slice), and --kubepods is unused. --args are the
// container's arguments, split at spaces (the test image's `spin` uses a whole CPU).
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "base/version.h"
#include "cgroup-model/kubelet_namer.h"
#include "tools/cri-client/cri_client.h"

namespace {

using namespace vri::cri_client;

int usage(const std::string& why) {
  std::fprintf(stderr,
               "vri-cri-client: %s\n"
               "usage: vri-cri-client [--socket=PATH] run POD --qos=guaranteed|burstable|besteffort "
               "[--cpu=REQUEST[:LIMIT]] [--memory=BYTES] [--kubepods=PATH] [--cgroup-driver=cgroupfs|systemd]\n"
               "                      [--args=\"WORD ...\"]\n"
               "       vri-cri-client [--socket=PATH] ps\n"
               "       vri-cri-client [--socket=PATH] pods\n"
               "       vri-cri-client [--socket=PATH] rm POD\n",
               why.c_str());
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

int run(CriClient& client, const std::string& name, const std::map<std::string, std::string>& flags) {
  const auto flag = [&](const std::string& key, const std::string& fallback) {
    const auto found = flags.find(key);
    return found == flags.end() ? fallback : found->second;
  };
  const std::string qos_text = flag("qos", "");
  PodQos qos;
  if (qos_text == "guaranteed") {
    qos = PodQos::kGuaranteed;
  } else if (qos_text == "burstable") {
    qos = PodQos::kBurstable;
  } else if (qos_text == "besteffort") {
    qos = PodQos::kBestEffort;
  } else {
    return usage("--qos: guaranteed, burstable or besteffort");
  }
  const std::string cpu = flag("cpu", "0");
  const size_t colon = cpu.find(':');
  int64_t request = 0, limit = 0, memory = 0;
  try {
    request = std::stoll(cpu.substr(0, colon));
    limit = colon == std::string::npos ? (qos == PodQos::kGuaranteed ? request : 0) : std::stoll(cpu.substr(colon + 1));
    memory = std::stoll(flag("memory", qos == PodQos::kBestEffort ? "0" : "67108864"));
  } catch (const std::exception&) {
    return usage("--cpu and --memory take numbers");
  }
  const std::string uid = newUid();
  std::string parent;
  const std::string driver = flag("cgroup-driver", "cgroupfs");
  if (driver == "systemd") {
    const vri::QosClass klass = qos == PodQos::kGuaranteed  ? vri::QosClass::kGuaranteed
                                : qos == PodQos::kBurstable ? vri::QosClass::kBurstable
                                                            : vri::QosClass::kBestEffort;
    auto slice = vri::makeKubeletNamer(vri::KubeletDriver::kSystemd)->pod(klass, uid);
    if (!slice.ok()) return usage(slice.error().message());
    parent = slice->leaf();  // kubelet sends the slice's name; systemd knows where it lives
  } else if (driver == "cgroupfs") {
    parent = podCgroupParent(flag("kubepods", "/kubepods"), qos, uid);
  } else {
    return usage("--cgroup-driver: cgroupfs or systemd");
  }
  const cri::PodSandboxConfig pod = sandboxConfig(uid, name, parent);
  std::string sandbox, container;
  if (grpc::Status s = client.runPodSandbox(pod, &sandbox); !s.ok()) return failed("RunPodSandbox", s);
  const cri::LinuxContainerResources resources = kubeletResources(request, limit, memory);
  std::vector<std::string> args;
  std::istringstream words(flag("args", ""));
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
  std::vector<std::string> words;
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("--socket=")) {
      socket = arg.substr(9);
    } else if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
      flags[arg.substr(2, arg.find('=') - 2)] = arg.substr(arg.find('=') + 1);
    } else {
      words.push_back(arg);
    }
  }
  if (words.empty()) return usage("no command");
  CriClient client(socket);
  if (words[0] == "run" && words.size() == 2) return run(client, words[1], flags);
  if (words[0] == "ps" && words.size() == 1) return ps(client);
  if (words[0] == "pods" && words.size() == 1) return pods(client);
  if (words[0] == "rm" && words.size() == 2) return rm(client, words[1]);
  return usage("unknown command or wrong arguments");
}
