#include "tests/soak/tenants.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "tools/cri-client/cri_client.h"

namespace vri::soak {
namespace {

using Clock = std::chrono::steady_clock;
using cri_client::CriClient;

// Not there is as good as removed: a removal tried again after it half succeeded.
bool removedOrGone(const grpc::Status& status) {
  return status.ok() || status.error_code() == grpc::StatusCode::NOT_FOUND;
}

// `call` (true: done; else it says why) with how long it took.
template <typename Call>
Outcome timed(Call call) {
  Outcome outcome;
  const auto start = Clock::now();
  outcome.ok = call(&outcome.detail);
  outcome.took = Clock::now() - start;
  return outcome;
}

}  // namespace

Outcome NodeTenants::startVm(bool dedicated) {
  SoakVm vm{"vri-test-soak-" + std::to_string(nextVm_), dedicated, false};
  const int uuidTail = (::getpid() % 10000) * 100000 + nextVm_++;
  const std::string xmlPath = node_.tmp().sub(vm.name + ".xml");
  std::ofstream(xmlPath) << testing::domainXml(vm.name, uuidTail, dedicated ? "dedicated" : "shared");
  const std::string scratch = node_.tmp().sub("tenants-virsh.out");
  Outcome outcome;
  if (testing::virsh({"define", xmlPath}, scratch, &outcome.detail) != 0) return outcome;
  const auto start = Clock::now();
  outcome.ok = testing::virsh({"start", vm.name}, scratch, &outcome.detail) == 0;
  outcome.took = Clock::now() - start;
  if (outcome.ok) {
    vm.acked = true;
    vms_.push_back(vm);
  } else if (!removeVmNow(vm.name, nullptr)) {
    vmsToRemove_.push_back(vm.name);
  }
  return outcome;
}

Outcome NodeTenants::destroyVm(size_t index) {
  const SoakVm vm = vms_.at(index);
  vms_.erase(vms_.begin() + static_cast<long>(index));
  const Outcome outcome = timed([&](std::string* why) { return removeVmNow(vm.name, why); });
  if (!outcome.ok) vmsToRemove_.push_back(vm.name);
  return outcome;
}

bool NodeTenants::removeVmNow(const std::string& name, std::string* why) {
  const std::string scratch = node_.tmp().sub("tenants-virsh.out");
  std::string state;
  if (testing::virsh({"domstate", name}, scratch, &state) != 0) return true;  // not defined: nothing to do
  if (state.find("shut off") == std::string::npos && testing::virsh({"destroy", name}, scratch, why) != 0) return false;
  return testing::virsh({"undefine", name}, scratch, why) == 0;
}

Outcome NodeTenants::createPod(bool guaranteed) {
  SoakPod pod;
  pod.uid = "50a1c0de-0000-4000-8000-" + std::to_string(100000000000 + (::getpid() % 10000) * 10000000 + nextPod_++);
  pod.guaranteed = guaranteed;
  pod.parent = cri_client::podCgroupParent(
      "/" + node_.kubeletRoot(), guaranteed ? cri_client::PodQos::kGuaranteed : cri_client::PodQos::kBurstable,
      pod.uid);
  CriClient cri(node_.criSocket(), false);  // kubelet's calls fail at once while the shim is away
  const auto config = cri_client::sandboxConfig(pod.uid, kPodName, pod.parent);
  const auto resources =
      guaranteed ? cri_client::kubeletResources(1000, 1000, 64 << 20) : cri_client::kubeletResources(100, 0, 64 << 20);
  const auto start = Clock::now();
  grpc::Status status = cri.runPodSandbox(config, &pod.sandbox);
  pod.sandboxLost = status.error_code() == grpc::StatusCode::UNAVAILABLE;
  if (status.ok())
    status =
        cri.createContainer(pod.sandbox, config, cri_client::containerConfig(config, "app", resources), &pod.container);
  if (status.ok()) status = cri.startContainer(pod.container);
  Outcome outcome{status.ok(), Clock::now() - start, status.error_message()};
  pod.acked = outcome.ok;
  if (outcome.ok) {
    pods_.push_back(pod);
  } else if (!removePodNow(pod, nullptr)) {
    podsToRemove_.push_back(pod);
  }
  return outcome;
}

Outcome NodeTenants::removePod(size_t index) {
  const SoakPod pod = pods_.at(index);
  pods_.erase(pods_.begin() + static_cast<long>(index));
  const Outcome outcome = timed([&](std::string* why) { return removePodNow(pod, why); });
  if (!outcome.ok) podsToRemove_.push_back(pod);
  return outcome;
}

bool NodeTenants::removePodNow(const SoakPod& pod, std::string* why) {
  CriClient cri(node_.criSocket(), false);  // kubelet's calls fail at once while the shim is away
  if (!removeContainerAndSandboxes(cri, pod, why)) return false;
  if (pod.sandboxLost) {
    // The sandbox asked for again (its name is free once the half-made one is gone), then removed as usual.
    std::string sandbox;
    const grpc::Status again = cri.runPodSandbox(cri_client::sandboxConfig(pod.uid, kPodName, pod.parent), &sandbox);
    if (!again.ok()) {
      if (why) *why = "sandbox asked for again: " + again.error_message();
      return false;
    }
    SoakPod found = pod;
    found.sandbox = sandbox;
    found.sandboxLost = false;
    if (!removeContainerAndSandboxes(cri, found, why)) return false;
  }
  // kubelet removes a deleted pod's cgroup once its containers are gone, with what is left below it (a
  // sandbox's empty cgroup when containerd's RunPodSandbox was cut short); nobody else does.
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
    testing::removeCgroupTree(hierarchy.path().string() + pod.parent);
  return true;
}

bool NodeTenants::removeContainerAndSandboxes(CriClient& cri, const SoakPod& pod, std::string* why) {
  grpc::Status status;
  if (!pod.container.empty()) {
    status = cri.stopContainer(pod.container);
    if (removedOrGone(status)) status = cri.removeContainer(pod.container);
  }
  // Every sandbox of the pod, as kubelet finds them by its UID: a RunPodSandbox whose answer was lost
  // (the shim died mid-call) may have made one nobody was told of.
  std::vector<std::string> sandboxes;
  if (!pod.sandbox.empty()) sandboxes.push_back(pod.sandbox);
  if (removedOrGone(status)) {
    ::runtime::v1::ListPodSandboxResponse listed;
    status = cri.listPodSandboxes(&listed);
    for (const auto& sandbox : listed.items())
      if (sandbox.metadata().uid() == pod.uid && sandbox.id() != pod.sandbox) sandboxes.push_back(sandbox.id());
  }
  for (const std::string& sandbox : sandboxes) {
    if (removedOrGone(status)) status = cri.stopPodSandbox(sandbox);
    if (removedOrGone(status)) status = cri.removePodSandbox(sandbox);
  }
  if (removedOrGone(status)) return true;
  if (why) *why = status.error_message();
  return false;
}

bool NodeTenants::retryRemovals() {
  std::vector<SoakPod> pods;
  for (const SoakPod& pod : podsToRemove_)
    if (!removePodNow(pod, nullptr)) pods.push_back(pod);
  podsToRemove_ = std::move(pods);
  std::vector<std::string> vms;
  for (const std::string& name : vmsToRemove_)
    if (!removeVmNow(name, nullptr)) vms.push_back(name);
  vmsToRemove_ = std::move(vms);
  return podsToRemove_.empty() && vmsToRemove_.empty();
}

std::optional<pid_t> NodeTenants::qemuPid(const std::string& name) const {
  std::ifstream in("/run/libvirt/qemu/" + name + ".pid");
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0 || ::kill(pid, 0) != 0) return std::nullopt;
  return pid;
}

bool NodeTenants::killQemu(const std::string& name) {
  const std::optional<pid_t> pid = qemuPid(name);
  if (!pid || ::kill(*pid, SIGKILL) != 0) return false;
  std::erase_if(vms_, [&](const SoakVm& vm) { return vm.name == name; });
  vmsToRemove_.push_back(name);  // libvirt marks it shut off; undefined on the next retry
  return true;
}

bool NodeTenants::running(const std::string& name) const {
  std::string state;
  return testing::virsh({"domstate", name}, node_.tmp().sub("tenants-virsh.out"), &state) == 0 &&
         state.find("running") != std::string::npos;
}

bool NodeTenants::killContainer(size_t index) {
  const SoakPod pod = pods_.at(index);
  CriClient direct(kContainerdSocket);  // the pid from containerd: the shim may be down
  const int pid = direct.pid(pod.container);
  if (pid <= 0 || ::kill(pid, SIGKILL) != 0) return false;
  pods_.erase(pods_.begin() + static_cast<long>(index));
  podsToRemove_.push_back(pod);
  return true;
}

}  // namespace vri::soak
