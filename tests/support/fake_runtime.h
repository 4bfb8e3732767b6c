// FakeRuntime: a container runtime in memory behind RuntimeClient, for the
// kubelet side's unit tests. Sandboxes and containers are made, listed,
// updated and removed as a CRI runtime does (removal is idempotent; an unknown
// id is NotFound), verbose statuses carry the config as containerd's do, and a
// test can make the next call of a method fail, or hold updates in flight.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/runtime_client.h"

namespace vri::testing {

class FakeRuntime final : public RuntimeClient {
 public:
  // The next call of `method` ("CreateContainer", "UpdateContainerResources", ...) fails with `error`.
  void failNext(const std::string& method, Error error) {
    std::lock_guard lock(mutex_);
    failures_.emplace(method, std::move(error));
  }
  // Updates wait until released: what a test sees while one is in flight.
  void holdUpdates() {
    std::lock_guard lock(mutex_);
    holding_ = true;
  }
  void releaseUpdates() {
    {
      std::lock_guard lock(mutex_);
      holding_ = false;
    }
    released_.notify_all();
  }
  // A sandbox or a container as if made before the shim ran.
  std::string addSandbox(const runtime::v1::PodSandboxConfig& config) {
    std::lock_guard lock(mutex_);
    return makeSandbox(config);
  }
  std::string addContainer(const std::string& sandboxId, const runtime::v1::ContainerConfig& config,
                           runtime::v1::ContainerState state, int exitCode = 0) {
    std::lock_guard lock(mutex_);
    const std::string id = makeContainer(sandboxId, config);
    containers_[id].container.set_state(state);
    containers_[id].exitCode = exitCode;
    return id;
  }

  // What was asked of it.
  std::vector<runtime::v1::UpdateContainerResourcesRequest> updates() const {
    std::lock_guard lock(mutex_);
    return updates_;
  }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  // The last request of `method` as it arrived, serialized with any fields this CRI subset does
  // not know; empty when none came.
  std::string lastRequestBytes(const std::string& method) const {
    std::lock_guard lock(mutex_);
    const auto found = lastRequests_.find(method);
    return found == lastRequests_.end() ? "" : found->second;
  }
  int mostUpdatesAtOnce() const {
    std::lock_guard lock(mutex_);
    return mostAtOnce_;
  }
  bool has(const std::string& id) const {
    std::lock_guard lock(mutex_);
    return sandboxes_.count(id) || containers_.count(id);
  }
  runtime::v1::LinuxContainerResources resourcesOf(const std::string& id) const {
    std::lock_guard lock(mutex_);
    return containers_.at(id).resources;
  }

  Result<runtime::v1::RunPodSandboxResponse> runPodSandbox(const CallScope&,
                                                           const runtime::v1::RunPodSandboxRequest& r) override {
    std::lock_guard lock(mutex_);
    lastRequests_["RunPodSandbox"] = r.SerializeAsString();
    VRI_TRY(called("RunPodSandbox"));
    runtime::v1::RunPodSandboxResponse out;
    out.set_pod_sandbox_id(makeSandbox(r.config()));
    return out;
  }
  Result<runtime::v1::CreateContainerResponse> createContainer(const CallScope&,
                                                               const runtime::v1::CreateContainerRequest& r) override {
    runtime::v1::CreateContainerResponse out;
    std::function<void()> during;
    {
      std::lock_guard lock(mutex_);
      lastRequests_["CreateContainer"] = r.SerializeAsString();
      VRI_TRY(called("CreateContainer"));
      if (!sandboxes_.count(r.pod_sandbox_id())) return Error::notFound("sandbox " + r.pod_sandbox_id());
      out.set_container_id(makeContainer(r.pod_sandbox_id(), r.config()));
      during = std::exchange(duringCreate_, nullptr);
    }
    if (during) during();
    return out;
  }
  // Runs once, inside the next create: what happens elsewhere on the node meanwhile.
  void duringNextCreate(std::function<void()> action) {
    std::lock_guard lock(mutex_);
    duringCreate_ = std::move(action);
  }
  Result<void> updateContainerResources(const CallScope&,
                                        const runtime::v1::UpdateContainerResourcesRequest& r) override {
    std::unique_lock lock(mutex_);
    updates_.push_back(r);  // tried, whether it lands or not
    lastRequests_["UpdateContainerResources"] = r.SerializeAsString();
    VRI_TRY(called("UpdateContainerResources"));
    ++atOnce_[r.container_id()];
    mostAtOnce_ = std::max(mostAtOnce_, atOnce_[r.container_id()]);
    released_.wait(lock, [&] { return !holding_; });
    --atOnce_[r.container_id()];
    const auto found = containers_.find(r.container_id());
    if (found == containers_.end()) return Error::notFound("container " + r.container_id());
    found->second.resources = r.linux();
    return {};
  }
  Result<void> stopPodSandbox(const CallScope&, const std::string& given) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("StopPodSandbox"));
    const std::string id = whole(sandboxes_, given);
    if (auto found = sandboxes_.find(id); found != sandboxes_.end())
      found->second.sandbox.set_state(runtime::v1::SANDBOX_NOTREADY);
    return {};
  }
  Result<void> removePodSandbox(const CallScope&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("RemovePodSandbox"));
    sandboxes_.erase(whole(sandboxes_, id));
    return {};
  }
  Result<void> startContainer(const CallScope&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("StartContainer"));
    if (containers_.count(whole(containers_, id)) == 0) return Error::notFound("container " + id + " not found");
    return {};
  }
  Result<void> removeContainer(const CallScope&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("RemoveContainer"));
    containers_.erase(whole(containers_, id));
    return {};
  }
  Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope&) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("ListPodSandbox"));
    std::vector<runtime::v1::PodSandbox> out;
    for (const auto& [id, s] : sandboxes_) out.push_back(s.sandbox);
    return out;
  }
  Result<std::vector<runtime::v1::Container>> listContainers(const CallScope&, const std::string& podUid) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("ListContainers"));
    std::vector<runtime::v1::Container> out;
    for (const auto& [id, c] : containers_) {
      if (podUid.empty() || c.podUid == podUid) out.push_back(c.container);
    }
    return out;
  }
  Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope&, const std::string& id,
                                                                 bool verbose) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("PodSandboxStatus"));
    const auto found = sandboxes_.find(whole(sandboxes_, id));
    if (found == sandboxes_.end()) return Error::notFound("sandbox " + id);
    runtime::v1::PodSandboxStatusResponse out;  // this CRI subset carries the id and the info only
    out.mutable_status()->set_id(found->first);
    if (verbose) (*out.mutable_info())["info"] = verboseInfoWithConfig(found->second.config);
    return out;
  }
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope&, const std::string& id,
                                                               bool verbose) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("ContainerStatus"));
    const auto found = containers_.find(whole(containers_, id));
    if (found == containers_.end()) return Error::notFound("container " + id);
    runtime::v1::ContainerStatusResponse out;
    out.mutable_status()->set_id(found->first);
    out.mutable_status()->set_state(found->second.container.state());
    out.mutable_status()->set_exit_code(found->second.exitCode);
    *out.mutable_status()->mutable_resources()->mutable_linux() = found->second.resources;
    if (verbose) (*out.mutable_info())["info"] = verboseInfoWithConfig(found->second.config);
    return out;
  }
  Result<runtime::v1::RuntimeConfigResponse> runtimeConfig(const CallScope&) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("RuntimeConfig"));
    runtime::v1::RuntimeConfigResponse out;
    out.mutable_linux()->set_cgroup_driver(cgroupDriver_);
    return out;
  }
  // The driver RuntimeConfig reports (containerd's SystemdCgroup).
  void setCgroupDriver(runtime::v1::CgroupDriver driver) {
    std::lock_guard lock(mutex_);
    cgroupDriver_ = driver;
  }

 private:
  struct Sandbox {
    runtime::v1::PodSandbox sandbox;
    runtime::v1::PodSandboxConfig config;
  };
  struct Container {
    runtime::v1::Container container;
    runtime::v1::ContainerConfig config;
    runtime::v1::LinuxContainerResources resources;
    std::string podUid;
    int exitCode = 0;
  };

  Result<void> called(const std::string& method) {
    calls_.push_back(method);
    const auto failure = failures_.find(method);
    if (failure == failures_.end()) return {};
    Error error = failure->second;
    failures_.erase(failure);
    return error;
  }
  std::string makeSandbox(const runtime::v1::PodSandboxConfig& config) {
    const std::string id = "sandbox" + std::to_string(++made_);
    Sandbox& s = sandboxes_[id];
    s.sandbox.set_id(id);
    *s.sandbox.mutable_metadata() = config.metadata();
    s.sandbox.set_state(runtime::v1::SANDBOX_READY);
    s.config = config;
    return id;
  }
  std::string makeContainer(const std::string& sandboxId, const runtime::v1::ContainerConfig& config) {
    const std::string id = "container" + std::to_string(++made_);
    Container& c = containers_[id];
    c.container.set_id(id);
    c.container.set_pod_sandbox_id(sandboxId);
    *c.container.mutable_metadata() = config.metadata();
    c.container.set_state(runtime::v1::CONTAINER_CREATED);
    c.config = config;
    c.resources = config.linux().resources();
    const auto sandbox = sandboxes_.find(sandboxId);
    c.podUid = sandbox != sandboxes_.end() ? sandbox->second.config.metadata().uid() : "";
    return id;
  }

  runtime::v1::CgroupDriver cgroupDriver_ = runtime::v1::CGROUPFS;
  std::function<void()> duringCreate_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  bool holding_ = false;
  int made_ = 0;
  // An id as containerd resolves it: itself, or the one whole id it is a unique prefix of.
  template <typename Map>
  static std::string whole(const Map& known, const std::string& id) {
    if (known.count(id) || id.empty()) return id;
    std::string match;
    for (auto it = known.lower_bound(id); it != known.end() && it->first.starts_with(id); ++it) {
      if (!match.empty()) return id;  // ambiguous
      match = it->first;
    }
    return match.empty() ? id : match;
  }
  std::map<std::string, Sandbox> sandboxes_;
  std::map<std::string, Container> containers_;
  std::multimap<std::string, Error> failures_;
  std::vector<runtime::v1::UpdateContainerResourcesRequest> updates_;
  std::vector<std::string> calls_;
  std::map<std::string, std::string> lastRequests_;
  std::map<std::string, int> atOnce_;
  int mostAtOnce_ = 0;
};

}  // namespace vri::testing
