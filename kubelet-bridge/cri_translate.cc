#include "kubelet-bridge/cri_translate.h"

#include <algorithm>
#include <map>
#include <set>

#include "cgroup-model/quote.h"

namespace vri::cri {

namespace {

constexpr int64_t kMinShares = 2;
constexpr int64_t kDefaultPeriodUs = 100000;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The CPU a resource block asks for: its quota when it has one, else its shares.
int64_t milliOf(const runtime::v1::LinuxContainerResources& r) {
  const int64_t limit = limitMilliFromQuota(r.cpu_quota(), r.cpu_period());
  return limit > 0 ? limit : requestMilliFromShares(r.cpu_shares());
}

void setResources(const runtime::v1::LinuxContainerResources& r, v1::AdmitContainerRequest& out) {
  out.set_cpu_request_milli(requestMilliFromShares(r.cpu_shares()));
  out.set_cpu_limit_milli(limitMilliFromQuota(r.cpu_quota(), r.cpu_period()));
  out.set_memory_limit_bytes(r.memory_limit_in_bytes() > 0 ? static_cast<uint64_t>(r.memory_limit_in_bytes()) : 0);
}

}  // namespace

int64_t requestMilliFromShares(int64_t shares) {
  if (shares <= kMinShares) return 0;
  return ceilDiv(shares * 1000, 1024);  // the smallest milli-CPU kubelet turns into these shares
}

int64_t limitMilliFromQuota(int64_t quota, int64_t period) {
  if (quota <= 0) return 0;
  return ceilDiv(quota * 1000, period > 0 ? period : kDefaultPeriodUs);
}

Result<v1::Qos> qosFromCgroupParent(std::string_view parent) {
  std::vector<std::string_view> parts;  // the path's non-empty components
  for (size_t start = 0; start <= parent.size();) {
    const size_t end = std::min(parent.find('/', start), parent.size());
    if (end > start) parts.push_back(parent.substr(start, end - start));
    start = end + 1;
  }
  const std::string_view leaf = parts.empty() ? std::string_view() : parts.back();
  const std::string_view above = parts.size() < 2 ? std::string_view() : parts[parts.size() - 2];
  if (leaf.ends_with(".slice")) {  // systemd: the slice name says it all
    if (leaf.starts_with("kubepods-burstable-pod")) return v1::BURSTABLE;
    if (leaf.starts_with("kubepods-besteffort-pod")) return v1::BEST_EFFORT;
    if (leaf.starts_with("kubepods-pod")) return v1::GUARANTEED;
  } else if (leaf.starts_with("pod")) {
    if (above == "burstable") return v1::BURSTABLE;
    if (above == "besteffort") return v1::BEST_EFFORT;
    return v1::GUARANTEED;
  }
  return Error::invalidArgument("cgroup_parent: " + quoteForMessage(parent) + " is not a kubelet pod cgroup");
}

Result<v1::AdmitPodRequest> admitPodRequest(const runtime::v1::PodSandboxConfig& config) {
  const runtime::v1::PodSandboxMetadata& meta = config.metadata();
  if (meta.uid().empty()) return Error::invalidArgument("sandbox metadata: no pod UID");
  v1::AdmitPodRequest out;
  out.set_pod_uid(meta.uid());
  out.set_pod_name(meta.namespace_() + "/" + meta.name());
  out.set_cgroup_parent(config.linux().cgroup_parent());
  if (config.linux().cgroup_parent().empty()) return Error::invalidArgument("sandbox: no cgroup parent");
  if (config.linux().has_overhead()) {
    const runtime::v1::LinuxContainerResources& overhead = config.linux().overhead();
    out.set_overhead_cpu_milli(milliOf(overhead));
    if (overhead.memory_limit_in_bytes() > 0)
      out.set_overhead_memory_bytes(static_cast<uint64_t>(overhead.memory_limit_in_bytes()));
  }
  return out;
}

Result<v1::AdmitContainerRequest> admitContainerRequest(const runtime::v1::CreateContainerRequest& request) {
  const runtime::v1::PodSandboxConfig& sandbox = request.sandbox_config();
  if (sandbox.metadata().uid().empty()) return Error::invalidArgument("sandbox_config: no pod UID");
  if (request.config().metadata().name().empty()) return Error::invalidArgument("config: no container name");
  VRI_ASSIGN_OR_RETURN(v1::Qos qos, qosFromCgroupParent(sandbox.linux().cgroup_parent()));
  v1::AdmitContainerRequest out;
  out.set_pod_uid(sandbox.metadata().uid());
  out.set_pod_name(sandbox.metadata().namespace_() + "/" + sandbox.metadata().name());
  out.set_qos(qos);
  out.set_container_name(request.config().metadata().name());
  setResources(request.config().linux().resources(), out);
  return out;
}

v1::AdmitContainerRequest resizeRequest(const runtime::v1::UpdateContainerResourcesRequest& request) {
  v1::AdmitContainerRequest out;
  out.set_container_id(request.container_id());
  setResources(request.linux(), out);
  return out;
}

bool mayGetExclusiveCpus(const v1::AdmitContainerRequest& request) {
  return request.qos() == v1::GUARANTEED && request.cpu_request_milli() > 0 &&
         request.cpu_request_milli() % 1000 == 0 && request.cpu_limit_milli() == request.cpu_request_milli();
}

std::string memoryNodes(const v1::Node& node) {
  std::string mems;
  for (const v1::NumaNodeInfo& numa : node.numa()) {
    if (numa.memory_bytes() > 0) mems += (mems.empty() ? "" : ",") + std::to_string(numa.id());
  }
  return mems.empty() ? "0" : mems;  // a node without NUMA information has node 0
}

void applyAllocation(const v1::ContainerAllocation& allocation, const NodeCgroups& node,
                     runtime::v1::LinuxContainerResources& resources) {
  resources.set_cpuset_cpus(allocation.cpuset_cpus());
  resources.set_cpuset_mems(allocation.cpuset_mems().empty() ? node.allMems : allocation.cpuset_mems());
  resources.set_cpu_shares(static_cast<int64_t>(allocation.cpu_shares()));
  resources.set_cpu_period(allocation.cpu_period_us() > 0 ? static_cast<int64_t>(allocation.cpu_period_us())
                                                          : kDefaultPeriodUs);
  resources.set_cpu_quota(allocation.cpu_quota_us() > 0 ? allocation.cpu_quota_us() : -1);
  if (allocation.memory_limit_bytes() > 0)
    resources.set_memory_limit_in_bytes(static_cast<int64_t>(allocation.memory_limit_bytes()));
  if (node.v2) (*resources.mutable_unified())["cpu.weight"] = std::to_string(allocation.cpu_weight());
}

std::vector<std::string> finishedContainers(const std::vector<SeenContainer>& seen, const std::string& creating,
                                            const std::string& currentSandbox) {
  std::map<std::string, bool> finished;  // name -> every instance exited for good so far
  for (const SeenContainer& c : seen) {
    if (c.name == creating) continue;
    const bool done = c.state == runtime::v1::CONTAINER_EXITED && (c.sandboxId != currentSandbox || c.exitCode == 0);
    auto [entry, inserted] = finished.emplace(c.name, done);
    if (!inserted) entry->second = entry->second && done;
  }
  std::vector<std::string> out;
  for (const auto& [name, done] : finished) {
    if (done) out.push_back(name);
  }
  return out;
}

}  // namespace vri::cri
