// FakeVrid: vrid in memory behind VridClient, for the kubelet side's unit
// tests. It keeps pods and containers by UID and name with their runtime ids,
// answers every shared container with the shared pool a test sets, binds and
// releases as vrid does (guarded releases answer false when the guard does not
// hold), records every request, can refuse the next call of a method, and
// streams the events a test pushes until the test ends the stream.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kubelet-bridge/vrid_client.h"

namespace vri::testing {

class FakeVrid final : public VridClient {
 public:
  // A call of `method` ("AdmitContainer", "ReleasePod", ...) is refused with
  // `error`: the next one, or the one after `skip` more.
  void refuseNext(const std::string& method, Error error, int skip = 0) {
    std::lock_guard lock(mutex_);
    refusals_.emplace(method, Refusal{std::move(error), skip});
  }
  // The shared pool every shared container is answered with; a change is a new decision.
  void setSharedCpus(const std::string& cpus) {
    std::lock_guard lock(mutex_);
    shared_ = cpus;
    ++sequence_;
  }
  // A pod vrid holds already (as if admitted before), with a sandbox bound.
  void holdPod(const std::string& uid, const std::string& sandboxId,
               const std::map<std::string, std::string>& containers /* name -> runtime id */) {
    std::lock_guard lock(mutex_);
    Pod& pod = pods_[uid];
    pod.sandboxId = sandboxId;
    for (const auto& [name, id] : containers) pod.containers[name] = id;
    ++sequence_;
  }
  // A pod as vrid's start-up adopts it from its cgroups alone: "adopted/<uid>", no sandbox bound,
  // every container (the sandbox's cgroup among them) named by its runtime id.
  void holdPodFromCgroups(const std::string& uid, const std::vector<std::string>& ids) {
    std::lock_guard lock(mutex_);
    Pod& pod = pods_[uid];
    pod.fromCgroups = true;
    for (const std::string& id : ids) pod.containers[id] = id;
    ++sequence_;
  }
  // Events for the current stream; end() ends it (vrid going away).
  void push(v1::Event::Kind kind) {
    {
      std::lock_guard lock(mutex_);
      v1::Event event;
      event.set_kind(kind);
      events_.push_back(event);
    }
    wake_.notify_all();
  }
  void endStream() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    wake_.notify_all();
  }

  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  std::vector<v1::AdmitContainerRequest> containerAdmits() const {
    std::lock_guard lock(mutex_);
    return containerAdmits_;
  }
  std::vector<v1::AdmitPodRequest> podAdmits() const {
    std::lock_guard lock(mutex_);
    return podAdmits_;
  }
  std::vector<v1::ReleasePodRequest> podReleases() const {
    std::lock_guard lock(mutex_);
    return podReleases_;
  }
  std::vector<v1::ReleaseContainerRequest> containerReleases() const {
    std::lock_guard lock(mutex_);
    return containerReleases_;
  }
  // The ids ContainerStarted was called with, in order.
  std::vector<std::string> startedContainers() const {
    std::lock_guard lock(mutex_);
    return startedContainers_;
  }
  bool holds(const std::string& uid) const {
    std::lock_guard lock(mutex_);
    return pods_.count(uid) > 0;
  }

  // Every AdmitPod takes this long before it is answered (a vrid that is slow).
  void slowPodAdmits(std::chrono::milliseconds delay) {
    std::lock_guard lock(mutex_);
    podAdmitDelay_ = delay;
  }

  Result<v1::PodAllocation> admitPod(const CallScope&, const v1::AdmitPodRequest& r) override {
    std::chrono::milliseconds delay{0};
    {
      std::lock_guard lock(mutex_);
      delay = podAdmitDelay_;
    }
    std::this_thread::sleep_for(delay);
    std::lock_guard lock(mutex_);
    podAdmits_.push_back(r);
    VRI_TRY(called("AdmitPod"));
    const bool is_new = !pods_.count(r.pod_uid());
    Pod& pod = pods_[r.pod_uid()];
    if (!r.sandbox_id().empty()) pod.sandboxId = r.sandbox_id();
    ++sequence_;
    v1::PodAllocation out;
    out.set_is_new(is_new);
    return out;
  }
  Result<v1::ContainerAllocation> admitContainer(const CallScope&, const v1::AdmitContainerRequest& r) override {
    std::lock_guard lock(mutex_);
    containerAdmits_.push_back(r);
    VRI_TRY(called("AdmitContainer"));
    Pod& pod = pods_[r.pod_uid()];
    const bool is_new = !pod.containers.count(r.container_name());
    std::string& id = pod.containers[r.container_name()];
    if (!r.container_id().empty()) id = r.container_id();
    ++sequence_;
    v1::ContainerAllocation out = allocation(r.container_name());
    out.set_is_new(is_new);
    return out;
  }
  Result<v1::ContainerAllocation> resizeContainer(const CallScope&, const v1::AdmitContainerRequest& r) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("ResizeContainer"));
    for (const auto& [uid, pod] : pods_) {
      for (const auto& [name, id] : pod.containers) {
        if (id == r.container_id()) return allocation(name);
      }
    }
    return Error::notFound("no container holds id " + r.container_id());
  }
  Result<bool> releasePod(const CallScope&, const v1::ReleasePodRequest& r) override {
    std::lock_guard lock(mutex_);
    podReleases_.push_back(r);
    VRI_TRY(called("ReleasePod"));
    for (auto it = pods_.begin(); it != pods_.end(); ++it) {
      const bool named = r.pod_uid().empty() ? it->second.sandboxId == r.sandbox_id() : it->first == r.pod_uid();
      if (!named) continue;
      if (r.only_unbound() && (!it->second.sandboxId.empty() || !it->second.containers.empty())) return false;
      pods_.erase(it);
      ++sequence_;
      return true;
    }
    return false;
  }
  Result<bool> releaseContainer(const CallScope&, const v1::ReleaseContainerRequest& r) override {
    std::lock_guard lock(mutex_);
    containerReleases_.push_back(r);
    VRI_TRY(called("ReleaseContainer"));
    for (auto& [uid, pod] : pods_) {
      for (auto it = pod.containers.begin(); it != pod.containers.end(); ++it) {
        const bool named = r.pod_uid().empty() ? it->second == r.container_id()
                                               : uid == r.pod_uid() && it->first == r.container_name();
        if (!named) continue;
        if (r.only_unbound() && !it->second.empty()) return false;
        pod.containers.erase(it);
        ++sequence_;
        return true;
      }
    }
    return false;
  }
  Result<v1::ContainerStartedReply> containerStarted(const CallScope&, const std::string& id) override {
    std::lock_guard lock(mutex_);
    startedContainers_.push_back(id);
    VRI_TRY(called("ContainerStarted"));
    for (const auto& [uid, pod] : pods_) {
      for (const auto& [name, held] : pod.containers)
        if (held == id) return v1::ContainerStartedReply();
    }
    return Error::notFound("container_id: no container holds runtime id " + id);
  }
  Result<v1::TenantList> listPods(const CallScope&) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("ListTenants"));
    v1::TenantList out;
    for (const auto& [uid, pod] : pods_) *out.add_tenants() = tenant(uid, pod);
    out.set_sequence(sequence_);
    return out;
  }
  Result<v1::Tenant> getPod(const CallScope&, const std::string& uid) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("GetTenant"));
    const auto found = pods_.find(uid);
    if (found == pods_.end()) return Error::notFound("no pod " + uid);
    return tenant(uid, found->second);
  }
  Result<v1::Node> node(const CallScope&) override {
    std::lock_guard lock(mutex_);
    VRI_TRY(called("GetNode"));
    v1::Node out;
    out.set_cgroup_version("v2");
    out.set_cgroup_driver("cgroupfs");
    out.set_online_cpu_list("0-7");
    v1::NumaNodeInfo& numa = *out.add_numa();
    numa.set_id(0);
    numa.set_memory_bytes(1ULL << 30);
    return out;
  }
  std::unique_ptr<EventStream> watch() override {
    {
      std::lock_guard lock(mutex_);
      calls_.push_back("Watch");
      events_.clear();
      ended_ = false;
      ++streams_;
    }
    return std::make_unique<Stream>(*this);
  }

 private:
  std::chrono::milliseconds podAdmitDelay_{0};
  struct Refusal {
    Error error;
    int skip = 0;
  };
  struct Pod {
    bool fromCgroups = false;
    std::string sandboxId;
    std::map<std::string, std::string> containers;  // name -> runtime id ("" until bound)
  };
  class Stream final : public EventStream {
   public:
    explicit Stream(FakeVrid& vrid) : vrid_(vrid) {}
    bool next(v1::Event& event) override {
      std::unique_lock lock(vrid_.mutex_);
      vrid_.wake_.wait(lock, [&] { return cancelled_ || vrid_.ended_ || !vrid_.events_.empty(); });
      if (cancelled_ || vrid_.events_.empty()) return false;
      event = vrid_.events_.front();
      vrid_.events_.pop_front();
      return true;
    }
    Error finish() override { return Error(ErrorCode::kUnavailable, "vrid went away"); }
    void cancel() override {
      {
        std::lock_guard lock(vrid_.mutex_);
        cancelled_ = true;
      }
      vrid_.wake_.notify_all();
    }

   private:
    FakeVrid& vrid_;
    bool cancelled_ = false;  // guarded by vrid_.mutex_
  };

  Result<void> called(const std::string& method) {
    calls_.push_back(method);
    const auto refusal = refusals_.find(method);
    if (refusal == refusals_.end()) return {};
    if (refusal->second.skip-- > 0) return {};
    Error error = refusal->second.error;
    refusals_.erase(refusal);
    return error;
  }
  v1::ContainerAllocation allocation(const std::string& name) const {
    v1::ContainerAllocation out;
    out.set_name(name);
    out.set_cpuset_cpus(shared_);
    out.set_cpu_shares(1024);
    out.set_cpu_weight(39);
    return out;
  }
  v1::Tenant tenant(const std::string& uid, const Pod& pod) const {
    v1::Tenant out;
    v1::PodInfo& info = *out.mutable_pod();
    info.set_uid(uid);
    info.set_name(pod.fromCgroups ? "adopted/" + uid : "default/" + uid);
    info.set_sandbox_id(pod.sandboxId);
    for (const auto& [name, id] : pod.containers) {
      v1::ContainerInfo& c = *info.add_containers();
      c.mutable_resources()->set_name(name);
      c.mutable_resources()->set_id(id);
      *c.mutable_allocation() = allocation(name);
    }
    return out;
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string shared_ = "0-7";
  uint64_t sequence_ = 1;
  std::map<std::string, Pod> pods_;
  std::multimap<std::string, Refusal> refusals_;
  std::deque<v1::Event> events_;
  bool ended_ = false;
  int streams_ = 0;
  std::vector<std::string> calls_;
  std::vector<v1::AdmitContainerRequest> containerAdmits_;
  std::vector<v1::AdmitPodRequest> podAdmits_;
  std::vector<v1::ReleasePodRequest> podReleases_;
  std::vector<v1::ReleaseContainerRequest> containerReleases_;
  std::vector<std::string> startedContainers_;
};

}  // namespace vri::testing
