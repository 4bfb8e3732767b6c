// A CRI client that makes kubelet's calls with kubelet's values (vri-cri-client
// and the shim's tests against a real containerd): host-network pods, containers
// of the test image (localhost/vri/pause:1.0, built by
// tests/containerd/containerd-fixture.sh) with CPU shares, quota and memory
// limits computed as kubelet computes them, and kubelet's labels (the pod UID
// label is how the shim finds a pod's containers).
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cgroup-model/kubelet_namer.h"
#include "kubelet-bridge/cri.grpc.pb.h"
#include "kubelet-bridge/verbose_info.h"

namespace vri::cri_client {

namespace cri = ::runtime::v1;

enum class PodQos { kGuaranteed, kBurstable, kBestEffort };

inline QosClass qosClassOf(PodQos qos) {
  switch (qos) {
    case PodQos::kGuaranteed: return QosClass::kGuaranteed;
    case PodQos::kBurstable: return QosClass::kBurstable;
    case PodQos::kBestEffort: return QosClass::kBestEffort;
  }
  return QosClass::kBestEffort;
}

// kubelet's cgroup parent for a pod as it hands it to the runtime, named by KubeletNamer as vrid
// names it: under cgroupfs the whole path ("/vri-cri-1/kubepods/burstable/pod<uid>"), under systemd
// the pod's slice name. `kubeletRoot` is kubelet's --cgroup-root (where kubepods sits: "/" or
// "/vri-cri-1"). Empty when the UID cannot name a cgroup.
inline std::string podCgroupParent(const std::string& kubeletRoot, PodQos qos, const std::string& uid,
                                   KubeletDriver driver = KubeletDriver::kCgroupfs) {
  const Result<CgroupPath> root = CgroupPath::parse(kubeletRoot);
  if (!root.ok()) return "";
  const Result<CgroupPath> pod = makeKubeletNamer(driver, *root)->pod(qosClassOf(qos), uid);
  if (!pod.ok()) return "";
  return driver == KubeletDriver::kSystemd ? pod->leaf() : "/" + pod->str();
}

inline cri::PodSandboxConfig sandboxConfig(const std::string& uid, const std::string& name, const std::string& parent,
                                           uint32_t attempt = 0) {
  cri::PodSandboxConfig config;
  config.mutable_metadata()->set_name(name);
  config.mutable_metadata()->set_uid(uid);
  config.mutable_metadata()->set_namespace_("default");
  config.mutable_metadata()->set_attempt(attempt);
  (*config.mutable_labels())["io.kubernetes.pod.uid"] = uid;
  (*config.mutable_labels())["io.kubernetes.pod.name"] = name;
  (*config.mutable_labels())["io.kubernetes.pod.namespace"] = "default";
  config.mutable_linux()->set_cgroup_parent(parent);
  // Host network and no hostname: no CNI on these machines.
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(cri::NODE);
  return config;
}

// kubelet's resources for requests and limits (milli-CPU, bytes; 0: none).
inline cri::LinuxContainerResources kubeletResources(int64_t cpuRequestMilli, int64_t cpuLimitMilli,
                                                     int64_t memoryLimitBytes) {
  cri::LinuxContainerResources r;
  r.set_cpu_shares(std::max<int64_t>(2, cpuRequestMilli * 1024 / 1000));
  r.set_cpu_period(100000);
  if (cpuLimitMilli > 0) r.set_cpu_quota(std::max<int64_t>(1000, cpuLimitMilli * 100000 / 1000));
  r.set_memory_limit_in_bytes(memoryLimitBytes);
  r.set_oom_score_adj(cpuLimitMilli > 0 && cpuLimitMilli == cpuRequestMilli ? -997 : 1000);
  return r;
}

inline cri::ContainerConfig containerConfig(const cri::PodSandboxConfig& pod, const std::string& name,
                                            const cri::LinuxContainerResources& resources,
                                            std::vector<std::string> args = {}, uint32_t attempt = 0) {
  cri::ContainerConfig config;
  config.mutable_metadata()->set_name(name);
  config.mutable_metadata()->set_attempt(attempt);
  config.mutable_image()->set_image("localhost/vri/pause:1.0");
  config.add_command("/sleeper");
  for (std::string& a : args) config.add_args(std::move(a));
  (*config.mutable_labels())["io.kubernetes.pod.uid"] = pod.metadata().uid();
  (*config.mutable_labels())["io.kubernetes.pod.name"] = pod.metadata().name();
  (*config.mutable_labels())["io.kubernetes.pod.namespace"] = pod.metadata().namespace_();
  (*config.mutable_labels())["io.kubernetes.container.name"] = name;
  *config.mutable_linux()->mutable_resources() = resources;
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(cri::NODE);
  return config;
}

class CriClient {
 public:
  // `waitForReady`: a call to an endpoint that is away waits (up to its 60 s) until it is back, as the tests
  // that restart it want; false: it fails at once, as kubelet's calls do.
  explicit CriClient(const std::string& socket, bool waitForReady = true)
      : stub_(cri::RuntimeService::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()))),
        waitForReady_(waitForReady) {}

  grpc::Status runPodSandbox(const cri::PodSandboxConfig& config, std::string* id) {
    cri::RunPodSandboxRequest request;
    *request.mutable_config() = config;
    cri::RunPodSandboxResponse response;
    auto c = context();
    grpc::Status status = stub_->RunPodSandbox(c.get(), request, &response);
    *id = response.pod_sandbox_id();
    return status;
  }
  grpc::Status createContainer(const std::string& sandbox, const cri::PodSandboxConfig& pod,
                               const cri::ContainerConfig& config, std::string* id) {
    cri::CreateContainerRequest request;
    request.set_pod_sandbox_id(sandbox);
    *request.mutable_config() = config;
    *request.mutable_sandbox_config() = pod;
    cri::CreateContainerResponse response;
    auto c = context();
    grpc::Status status = stub_->CreateContainer(c.get(), request, &response);
    *id = response.container_id();
    return status;
  }
  grpc::Status startContainer(const std::string& id) {
    cri::StartContainerRequest request;
    request.set_container_id(id);
    cri::StartContainerResponse response;
    auto c = context();
    return stub_->StartContainer(c.get(), request, &response);
  }
  grpc::Status stopContainer(const std::string& id) {
    cri::StopContainerRequest request;
    request.set_container_id(id);
    cri::StopContainerResponse response;
    auto c = context();
    return stub_->StopContainer(c.get(), request, &response);
  }
  grpc::Status removeContainer(const std::string& id) {
    cri::RemoveContainerRequest request;
    request.set_container_id(id);
    cri::RemoveContainerResponse response;
    auto c = context();
    return stub_->RemoveContainer(c.get(), request, &response);
  }
  grpc::Status stopPodSandbox(const std::string& id) {
    cri::StopPodSandboxRequest request;
    request.set_pod_sandbox_id(id);
    cri::StopPodSandboxResponse response;
    auto c = context();
    return stub_->StopPodSandbox(c.get(), request, &response);
  }
  grpc::Status removePodSandbox(const std::string& id) {
    cri::RemovePodSandboxRequest request;
    request.set_pod_sandbox_id(id);
    cri::RemovePodSandboxResponse response;
    auto c = context();
    return stub_->RemovePodSandbox(c.get(), request, &response);
  }
  grpc::Status status(const std::string& id, cri::ContainerStatusResponse* out, bool verbose = false) {
    cri::ContainerStatusRequest request;
    request.set_container_id(id);
    request.set_verbose(verbose);
    auto c = context();
    return stub_->ContainerStatus(c.get(), request, out);
  }
  grpc::Status updateResources(const std::string& id, const cri::LinuxContainerResources& resources) {
    cri::UpdateContainerResourcesRequest request;
    request.set_container_id(id);
    *request.mutable_linux() = resources;
    cri::UpdateContainerResourcesResponse response;
    auto c = context();
    return stub_->UpdateContainerResources(c.get(), request, &response);
  }
  grpc::Status listContainers(const std::string& podUid, cri::ListContainersResponse* out) {
    cri::ListContainersRequest request;
    if (!podUid.empty()) (*request.mutable_filter()->mutable_label_selector())["io.kubernetes.pod.uid"] = podUid;
    auto c = context();
    return stub_->ListContainers(c.get(), request, out);
  }
  grpc::Status listPodSandboxes(cri::ListPodSandboxResponse* out) {
    auto c = context();
    return stub_->ListPodSandbox(c.get(), cri::ListPodSandboxRequest(), out);
  }

  // The container's state once it is `state`, within `limit`.
  bool waitFor(const std::string& id, cri::ContainerState state,
               std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      cri::ContainerStatusResponse s;
      if (status(id, &s).ok() && s.status().state() == state) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  // The container's main process, from containerd's verbose status (-1: not known).
  int pid(const std::string& id) {
    cri::ContainerStatusResponse s;
    if (!status(id, &s, true).ok()) return -1;
    const Result<int> pid = verboseInfoPid(s);
    return pid.ok() ? *pid : -1;
  }
  // linux.resources.cpu.<field> of the container's OCI spec, from containerd's verbose status: what
  // the runtime applied, as it records it for either way in (the shim's values arrive in CRI's calls
  // and show in CRI's resources too; an NRI plugin's adjustment shows only in the spec). Why it is
  // not known, in angle brackets, otherwise.
  std::string specCpu(const std::string& id, const std::string& field) {
    cri::ContainerStatusResponse s;
    if (const grpc::Status got = status(id, &s, true); !got.ok()) return "<" + got.error_message() + ">";
    const Result<std::string> value = verboseInfoSpecCpu(s, field);
    return value.ok() ? *value : "<" + value.error().message() + ">";
  }
  // Its cpuset: empty when the spec sets none, "?" when the status could not be read.
  std::string specCpus(const std::string& id) {
    const std::string cpus = specCpu(id, "cpus");
    if (!cpus.starts_with("<")) return cpus;
    return cpus.find("has no cpus") != std::string::npos ? "" : "?";
  }

 private:
  std::unique_ptr<grpc::ClientContext> context() const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    c->set_wait_for_ready(waitForReady_);
    return c;
  }
  std::unique_ptr<cri::RuntimeService::Stub> stub_;
  bool waitForReady_;
};

}  // namespace vri::cri_client
