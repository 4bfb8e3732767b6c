#include "kubelet-bridge/cri_translate.h"

#include <algorithm>
#include <map>
#include <set>

#include "base/amount_limits.h"
#include "base/quote.h"
#include "cgroup-model/cgroup_values.h"

namespace vri::cri {

namespace {

constexpr int64_t kMaxShares = 262144;  // the kernel's ceiling for cpu.shares
constexpr int64_t kDefaultPeriodUs = 100000;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The CPU a resource block asks for: its quota when it has one, else its shares.
Result<int64_t> milliOf(const runtime::v1::LinuxContainerResources& r) {
  VRI_ASSIGN_OR_RETURN(const int64_t limit, limitMilliFromQuota(r.cpu_quota(), r.cpu_period()));
  if (limit > 0) return limit;
  return requestMilliFromShares(r.cpu_shares());
}

Result<uint64_t> memoryLimitOf(const runtime::v1::LinuxContainerResources& r) {
  const int64_t limit = r.memory_limit_in_bytes();
  if (limit < 0)
    return Error::invalidArgument("memory_limit_in_bytes: must not be negative, got " + std::to_string(limit));
  VRI_TRY(checkMemoryBytes("memory_limit_in_bytes", static_cast<uint64_t>(limit)));
  return static_cast<uint64_t>(limit);
}

Result<void> setResources(const runtime::v1::LinuxContainerResources& r, v1::AdmitContainerRequest& out) {
  VRI_ASSIGN_OR_RETURN(const int64_t request, requestMilliFromShares(r.cpu_shares()));
  VRI_ASSIGN_OR_RETURN(const int64_t limit, limitMilliFromQuota(r.cpu_quota(), r.cpu_period()));
  VRI_ASSIGN_OR_RETURN(const uint64_t memory, memoryLimitOf(r));
  out.set_cpu_request_milli(request);
  out.set_cpu_limit_milli(limit);
  out.set_memory_limit_bytes(memory);
  for (const runtime::v1::HugepageLimit& pages : r.hugepage_limits()) {
    VRI_ASSIGN_OR_RETURN(const uint64_t size, hugepageSizeBytes(pages.page_size()).context("hugepage_limits"));
    v1::HugepageLimit& limit_out = *out.add_hugepage_limits();
    limit_out.set_page_size_bytes(size);
    limit_out.set_limit_bytes(pages.limit());
  }
  return {};
}

}  // namespace

Result<uint64_t> hugepageSizeBytes(std::string_view text) {
  // kubelet writes sizes as runc names the hugetlb files: a number and a binary unit ("2MB", "1GB").
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  const std::string_view unit = text.substr(digits);
  static const std::map<std::string_view, int> kShifts = {{"B", 0},   {"KB", 10}, {"MB", 20},
                                                          {"GB", 30}, {"TB", 40}, {"PB", 50}};
  const auto shift = kShifts.find(unit);
  if (digits == 0 || digits > 6 || shift == kShifts.end())
    return Error::invalidArgument("page_size: not a page size: " + quoteForMessage(text));
  const uint64_t size = std::stoull(std::string(text.substr(0, digits))) << shift->second;
  if (size == 0 || (size & (size - 1)) != 0)
    return Error::invalidArgument("page_size: not a page size: " + quoteForMessage(text));
  return size;
}

Result<int64_t> requestMilliFromShares(int64_t shares) {
  if (shares < 0 || shares > kMaxShares)
    return Error::invalidArgument("cpu_shares: " + std::to_string(shares) + " is outside [0, " +
                                  std::to_string(kMaxShares) + "]");
  return milliCpuFromShares(CpuShares{static_cast<uint64_t>(shares)});
}

Result<int64_t> limitMilliFromQuota(int64_t quota, int64_t period) {
  if (period < 0 || period > kMaxCfsPeriodUs)
    return Error::invalidArgument("cpu_period: " + std::to_string(period) + " µs is outside [0, " +
                                  std::to_string(kMaxCfsPeriodUs) + "]");
  if (quota < -1) return Error::invalidArgument("cpu_quota: " + std::to_string(quota) + " (-1 or 0: no limit)");
  if (quota <= 0) return 0;
  const int64_t over = period > 0 ? period : kDefaultPeriodUs;
  // quota / period CPUs, checked before the product so it cannot wrap.
  if (quota / over > kMaxCpuMilli / 1000)
    return Error::invalidArgument("cpu_quota: " + std::to_string(quota) + " µs per " + std::to_string(over) +
                                  " µs is beyond what any node holds (" + std::to_string(kMaxCpuMilli / 1000) +
                                  " CPUs)");
  return ceilDiv(quota * 1000, over);
}

Result<v1::AdmitPodRequest> admitPodRequest(const runtime::v1::PodSandboxConfig& config) {
  const runtime::v1::PodSandboxMetadata& meta = config.metadata();
  if (meta.uid().empty()) return Error::invalidArgument("sandbox metadata: no pod UID");
  v1::AdmitPodRequest out;
  out.set_pod_uid(meta.uid());
  out.set_pod_name(meta.namespace_() + "/" + meta.name());
  out.set_cgroup_parent(config.linux().cgroup_parent());
  // No cgroup parent: not one of kubelet's pods (crictl, critest, a debugging client). The runtime places it.
  out.set_outside_kubelet_tree(config.linux().cgroup_parent().empty());
  if (config.linux().has_overhead()) {
    const runtime::v1::LinuxContainerResources& overhead = config.linux().overhead();
    VRI_ASSIGN_OR_RETURN(const int64_t cpu, milliOf(overhead).context("linux.overhead"));
    VRI_ASSIGN_OR_RETURN(const uint64_t memory, memoryLimitOf(overhead).context("linux.overhead"));
    out.set_overhead_cpu_milli(cpu);
    out.set_overhead_memory_bytes(memory);
  }
  return out;
}

Result<v1::AdmitContainerRequest> admitContainerRequest(const runtime::v1::CreateContainerRequest& request) {
  const runtime::v1::PodSandboxConfig& sandbox = request.sandbox_config();
  if (sandbox.metadata().uid().empty()) return Error::invalidArgument("sandbox_config: no pod UID");
  if (request.config().metadata().name().empty()) return Error::invalidArgument("config: no container name");
  v1::AdmitContainerRequest out;
  out.set_pod_uid(sandbox.metadata().uid());
  out.set_pod_name(sandbox.metadata().namespace_() + "/" + sandbox.metadata().name());
  out.set_cgroup_parent(sandbox.linux().cgroup_parent());
  out.set_outside_kubelet_tree(sandbox.linux().cgroup_parent().empty());
  out.set_container_name(request.config().metadata().name());
  VRI_TRY(setResources(request.config().linux().resources(), out).context("config.linux.resources"));
  return out;
}

Result<v1::AdmitContainerRequest> resizeRequest(const runtime::v1::UpdateContainerResourcesRequest& request) {
  if (request.container_id().empty()) return Error::invalidArgument("container_id: must not be empty");
  v1::AdmitContainerRequest out;
  out.set_container_id(request.container_id());
  VRI_TRY(setResources(request.linux(), out).context("linux"));
  return out;
}

Result<NodeCgroups> nodeCgroups(const v1::Node& node) {
  if (node.cgroup_version() != "v1" && node.cgroup_version() != "v2")
    return Error::failedPrecondition("vrid does not say its node's cgroup version (" +
                                     quoteForMessage(node.cgroup_version()) + "): is it older than this shim?");
  std::string mems;
  for (const v1::NumaNodeInfo& numa : node.numa()) {
    if (numa.memory_bytes() > 0) mems += (mems.empty() ? "" : ",") + std::to_string(numa.id());
  }
  return NodeCgroups{node.cgroup_version() == "v2", mems.empty() ? "0" : mems};  // no NUMA information: node 0
}

void applyAllocation(const v1::ContainerAllocation& allocation, const NodeCgroups& node,
                     runtime::v1::LinuxContainerResources& resources) {
  resources.set_cpuset_cpus(allocation.cpuset_cpus());
  // Outside kubelet's tree only the CPUs are VRI's: the rest stays what the client asked for.
  if (allocation.outside_kubelet_tree()) return;
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
