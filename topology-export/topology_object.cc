#include "topology-export/topology_object.h"

#include "base/cpuset.h"
#include "topology-export/pods_fingerprint.h"

namespace vri::topology_export {
namespace {

using nlohmann::json;

CpuSet cpusOf(const std::string& list) {
  auto parsed = CpuSet::parse(list);
  return parsed.ok() ? std::move(parsed).value() : CpuSet{};
}

std::string zoneName(int32_t id) { return "node-" + std::to_string(id); }

json resource(const std::string& name, uint64_t capacity, uint64_t allocatable, uint64_t available) {
  // Plain integers: a quantity in bytes or CPUs, which the CRD takes as int-or-string.
  return {{"name", name},
          {"capacity", std::to_string(capacity)},
          {"allocatable", std::to_string(allocatable)},
          {"available", std::to_string(available)}};
}

std::string option(const v1::Node& node, const std::string& name, const std::string& otherwise) {
  const auto it = node.options().find(name);
  return it == node.options().end() || it->second.empty() ? otherwise : it->second;
}

json zone(const v1::Node& node, const v1::NumaNodeInfo& numa, const CpuSet& reserved) {
  json costs = json::array();
  for (const v1::NumaNodeInfo& to : node.numa()) {
    const auto it = numa.distances().find(to.id());
    if (it != numa.distances().end()) costs.push_back({{"name", zoneName(to.id())}, {"value", it->second}});
  }
  const CpuSet cpus = cpusOf(numa.cpus());
  json resources = json::array();
  resources.push_back(resource("cpu", cpus.count(), (cpus - reserved).count(),
                               static_cast<uint64_t>(std::max(0, numa.exclusive_cpus_available()))));
  for (const v1::MemoryBooks& books : node.capacity().memory()) {
    if (books.numa_node() != numa.id()) continue;
    const v1::ResourceBooks& b = books.books();
    if (books.page_size() == 0) {
      resources.push_back(resource("memory", b.capacity(), b.allocatable(), b.free()));
    } else if (b.capacity() > 0) {
      resources.push_back(
          resource("hugepages-" + hugepageSizeName(books.page_size()), b.capacity(), b.allocatable(), b.free()));
    }
  }
  return {{"name", zoneName(numa.id())}, {"type", "Node"}, {"costs", costs}, {"resources", resources}};
}

}  // namespace

std::string hugepageSizeName(uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "Gi";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "Mi";
  return std::to_string(bytes >> 10) + "Ki";
}

std::string fingerprintOfPods(const v1::TenantList& pods) {
  std::vector<PodName> names;
  for (const v1::Tenant& tenant : pods.tenants()) {
    if (!tenant.has_pod() || tenant.pod().qos() != v1::GUARANTEED) continue;
    const std::string& name = tenant.pod().name();
    const size_t slash = name.find('/');
    if (slash == std::string::npos) continue;  // admitted without a name: the scheduler cannot know it either
    names.push_back({name.substr(0, slash), name.substr(slash + 1)});
  }
  return podsFingerprint(names);
}

json topologyObject(const std::string& nodeName, const v1::Node& node, const v1::TenantList& pods) {
  const CpuSet reserved = cpusOf(node.reserved_cpus());
  json zones = json::array();
  for (const v1::NumaNodeInfo& numa : node.numa()) zones.push_back(zone(node, numa, reserved));
  const json attributes = json::array({
      {{"name", "topologyManagerPolicy"}, {"value", option(node, "topology_manager_policy", "none")}},
      {{"name", "topologyManagerScope"}, {"value", option(node, "topology_manager_scope", "container")}},
      {{"name", "nodeTopologyPodsFingerprint"}, {"value", fingerprintOfPods(pods)}},
      {{"name", "nodeTopologyPodsFingerprintMethod"}, {"value", kFingerprintMethod}},
  });
  return {{"apiVersion", "topology.node.k8s.io/v1alpha2"},
          {"kind", "NodeResourceTopology"},
          {"metadata", {{"name", nodeName}, {"labels", {{"app.kubernetes.io/managed-by", "vri"}}}}},
          {"attributes", attributes},
          {"zones", zones}};
}

}  // namespace vri::topology_export
