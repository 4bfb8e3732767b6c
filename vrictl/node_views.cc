#include "vrictl/node_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/cpuset.h"

namespace vri::ctl {

namespace {

// "Label:          value\n", virsh-style.
std::string row(const std::string& label, const std::string& value) {
  return fmt::format("{:<22} {}\n", label + ":", value);
}

std::string qosName(v1::Qos qos) {
  switch (qos) {
    case v1::GUARANTEED: return "Guaranteed";
    case v1::BURSTABLE: return "Burstable";
    case v1::BEST_EFFORT: return "BestEffort";
    default: return "?";
  }
}

std::string policyName(v1::VmCpuPolicy policy) {
  switch (policy) {
    case v1::DEDICATED: return "dedicated";
    case v1::MIXED: return "mixed";
    default: return "shared";
  }
}

// "0-3 (4 CPUs)", "0 (1 CPU)", "none": a lone "0" reads as "none" otherwise.
std::string withCount(const std::string& cpus) {
  if (cpus.empty()) return "none";
  const auto set = CpuSet::parse(cpus);
  if (!set.ok()) return cpus;
  const int n = set->count();
  return cpus + " (" + std::to_string(n) + (n == 1 ? " CPU)" : " CPUs)");
}

std::string orShared(const std::string& cpus) { return cpus.empty() ? "shared pool" : withCount(cpus); }

std::string option(const v1::Node& node, const std::string& name) {
  const auto it = node.options().find(name);
  return it == node.options().end() ? "?" : it->second;
}

}  // namespace

std::string cpuAmount(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  std::string text = fmt::format("{:.3f}", static_cast<double>(milli) / 1000.0);
  while (text.back() == '0') text.pop_back();  // "0.25", "4.5"
  return text;
}

// vrictl's own sizes; vri-topology's report has its own format.
std::string formatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    return fmt::format("{} {}", static_cast<uint64_t>(value), kUnits[unit]);
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string formatNodeInfo(const v1::Node& n) {
  std::string out;
  out += row("Topology", n.topology_source());
  out += row("CPUs online", std::to_string(n.online_cpus()) + " (" + n.online_cpu_list() + ")");
  out += row("Packages", std::to_string(n.packages()));
  out += row("Cores", std::to_string(n.cores()));
  out += row("NUMA nodes", std::to_string(n.numa_nodes()));
  for (const v1::NumaNodeInfo& numa : n.numa()) {
    std::string line = "CPUs " + withCount(numa.cpus()) + ", " + formatBytes(numa.memory_bytes()) + ", " +
                       formatBytes(numa.free_memory_bytes()) + " free";
    for (const auto& [size, pages] : numa.hugepages()) {
      if (pages > 0) line += ", " + std::to_string(pages) + " x " + formatBytes(size) + " pages";
    }
    out += row("  node " + std::to_string(numa.id()), line);
  }
  out += row("Cgroups", (n.cgroup_version().empty() ? std::string("?") : n.cgroup_version()) + ", kubelet's driver " +
                            n.cgroup_driver() + " (ownership: " + option(n, "ownership") + ")");
  out += row("Exclusive pod CPUs", n.cpuset_partitions() ? "cpuset partitions (shared cgroups keep a wide cpuset)"
                                                         : "taken out of every shared cgroup's cpuset");
  out +=
      row("Topology manager", option(n, "topology_manager_policy") + ", scope " + option(n, "topology_manager_scope"));
  out += row("Allocator", std::string(option(n, "numa_fit") == "true" ? "VRI placement" : "kubelet packed") +
                              (option(n, "full_pcpus_only") == "true" ? ", full-pcpus-only" : ""));
  out += row("Tenants", std::to_string(n.pods()) + " pods, " + std::to_string(n.vms()) + " VMs");
  out += row("vrid version", n.version());
  // The clients that called this vrid since it started: after an upgrade, whether the hook
  // and the shim that run are the ones installed.
  for (const v1::ClientVersion& client : n.clients())
    out += row("  " + client.program(),
               client.version() + " (last call " + std::to_string(client.seconds_since_last_call()) + " s ago)");
  return out;
}

namespace {

std::string booksRow(const std::string& label, const v1::ResourceBooks& b, std::string (*amount)(uint64_t)) {
  return fmt::format("{:<20}{:>10}{:>10}{:>12}{:>10}{:>10}{:>10}\n", label, amount(b.capacity()), amount(b.reserved()),
                     amount(b.allocatable()), amount(b.pods()), amount(b.vms()), amount(b.free()));
}

std::string cpuBooks(uint64_t milli) { return cpuAmount(static_cast<int64_t>(milli)); }

std::string pageSize(uint64_t bytes) {
  std::string size = formatBytes(bytes);
  size.erase(std::remove(size.begin(), size.end(), ' '), size.end());
  return size;  // "2MiB"
}

}  // namespace

// kubelet's books, for each resource: what the node has, keeps back, offers, and who holds it.
std::string formatCapacity(const v1::Node& n) {
  std::string out = fmt::format("{:<20}{:>10}{:>10}{:>12}{:>10}{:>10}{:>10}\n", "Resource", "Capacity", "Reserved",
                                "Allocatable", "Pods", "VMs", "Free");
  out += booksRow("CPUs", n.capacity().cpu_milli(), &cpuBooks);
  for (const v1::MemoryBooks& m : n.capacity().memory()) {
    if (m.page_size() != 0 && m.books().capacity() == 0) continue;  // a page size the node has none of
    std::string label = m.page_size() == 0 ? "memory" : pageSize(m.page_size()) + " pages";
    label = m.numa_node() < 0 ? "Memory" : "  node " + std::to_string(m.numa_node()) + " " + label;
    out += booksRow(label, m.books(), &formatBytes);
  }
  out += "\nCPUs are requests, in CPUs; a NUMA node's books count its NUMA-bound tenants only.\n";
  out += row("Shared demand", fmt::format("{} {} by {} shared {}", cpuAmount(n.shared_demand_milli()),
                                          n.shared_demand_milli() == 1000 ? "CPU" : "CPUs", n.shared_tenants(),
                                          n.shared_tenants() == 1 ? "tenant" : "tenants"));
  // What the NodeResourceTopology object offers per zone: one exclusive request kept to a NUMA node,
  // as far as the shared pool's minimum lets it go.
  std::string zones;
  for (const v1::NumaNodeInfo& numa : n.numa())
    zones += fmt::format("{}node {}: {}", zones.empty() ? "" : ", ", numa.id(), numa.exclusive_cpus_available());
  if (!zones.empty()) out += row("Exclusive CPUs free", zones + " (one request within a NUMA node)");
  return out;
}

std::string formatPool(const v1::Node& n) {
  std::string out;
  out += row("Reserved", withCount(n.reserved_cpus()) + (n.strict_cpu_reservation() ? " (strict)" : ""));
  out += row("Shared", withCount(n.shared_cpus()));
  // With cpuset partitions the shared cgroups hold a wider set, which containerd and virsh show: the
  // kernel takes the pods' partitions out of it.
  if (n.cpuset_partitions())
    out += row("Shared cpuset", n.shared_cpuset() + "  (with the pod partitions, which the kernel takes out)");
  const std::map<std::string, std::string> owners(n.exclusive_cpus().begin(), n.exclusive_cpus().end());
  if (owners.empty()) out += row("Exclusive", "none");
  for (const auto& [owner, cpus] : owners) out += row("Exclusive", withCount(cpus) + "  " + owner);
  return out;
}

// The user's own <vcpupin>s override the policy: such a VM is "pinned".
std::string vmClass(const v1::VmInfo& vm) {
  return vm.spec().pinned_vcpu_cpus().empty() ? policyName(vm.spec().cpu_policy()) : "pinned";
}

// A pod's class: its QoS, or "outside" for a pod outside kubelet's tree (no QoS class, the runtime's cgroups).
std::string podClass(const v1::PodInfo& pod) { return pod.outside_kubelet_tree() ? "outside" : qosName(pod.qos()); }

// Where a tenant runs: exclusive CPUs marked, shared ones as the shared pool is now.
std::string containerCpus(const v1::ContainerInfo& c) {
  return c.exclusive_cpus().empty() ? c.cpuset_cpus() : c.exclusive_cpus() + " excl";
}

std::string vmCpus(const v1::VmInfo& vm) {
  const v1::VmAllocation& a = vm.allocation();
  if (a.exclusive_cpus().empty()) return a.shared_cpus();
  bool shared_vcpu = false;
  for (int cpu : a.vcpu_cpus()) shared_vcpu = shared_vcpu || cpu < 0;
  return a.exclusive_cpus() + " excl" + (shared_vcpu ? ", " + a.shared_cpus() : "");
}

std::string formatTenantList(const v1::TenantList& list) {
  std::string out = fmt::format("{:<4} {:<36} {:<24} {:<10} {}\n", "Kind", "Id", "Name", "Class", "CPUs");
  out += std::string(90, '-') + "\n";
  bool reserved_only = false;
  for (const v1::Tenant& t : list.tenants()) {
    if (t.has_pod()) {
      std::string cpus;
      for (const v1::ContainerInfo& c : t.pod().containers()) {
        cpus += (cpus.empty() ? "" : " ") + c.resources().name() + "=" + containerCpus(c);
      }
      out +=
          fmt::format("{:<4} {:<36} {:<24} {:<10} {}\n", "pod", t.pod().uid(), t.pod().name(), podClass(t.pod()), cpus);
    } else {
      const v1::VmInfo& vm = t.vm();
      out += fmt::format("{:<4} {:<36} {:<24} {:<10} {}\n", "vm", vm.uuid(), vm.name(),
                         vmClass(vm) + (vm.reserved_only() ? "*" : ""), vmCpus(vm));
      reserved_only = reserved_only || vm.reserved_only();
    }
  }
  if (reserved_only) out += "* defined, not running: it holds its placement\n";
  return out;
}

std::string formatVmInfo(const v1::VmInfo& vm) {
  std::string out;
  out += row("Name", vm.name());
  out += row("UUID", vm.uuid());
  out += row("State", vm.reserved_only() ? "reserved (defined, not running)" : "admitted");
  const bool pinned = !vm.spec().pinned_vcpu_cpus().empty();
  out += row("CPU policy", pinned ? "pinned (the domain's own <vcpupin>)" : vmClass(vm));
  const auto& online = vm.allocation().online_vcpus();
  out += row("vCPUs",
             std::to_string(vm.spec().vcpus()) + " online of " + std::to_string(vm.allocation().vcpu_cpus_size()));
  for (int i = 0; i < vm.allocation().vcpu_cpus_size(); ++i) {
    const int cpu = vm.allocation().vcpu_cpus(i);
    const bool offline = !online.empty() && std::find(online.begin(), online.end(), i) == online.end();
    out += row("  vcpu" + std::to_string(i),
               (cpu < 0 ? "shared pool " + withCount(vm.allocation().shared_cpus()) : "CPU " + std::to_string(cpu)) +
                   (offline ? " (offline)" : ""));
  }
  out += row("Emulator", orShared(vm.allocation().emulator_cpus()));
  if (!vm.allocation().held_back_cpus().empty()) out += row("Held back", withCount(vm.allocation().held_back_cpus()));
  out += row("Memory",
             formatBytes(vm.memory_bytes()) +
                 (vm.allocation().cpuset_mems().empty() ? "" : " on NUMA nodes " + vm.allocation().cpuset_mems()));
  out += row("Cgroup", vm.scope().empty() ? "not known yet" : vm.scope());
  return out;
}

std::string formatPodInfo(const v1::PodInfo& pod) {
  std::string out;
  out += row("Name", pod.name());
  out += row("UID", pod.uid());
  out +=
      row("QoS", pod.outside_kubelet_tree() ? "none: outside kubelet's tree (the runtime's cgroups, on the shared pool)"
                                            : qosName(pod.qos()));
  out += row("Memory", formatBytes(pod.memory_bytes()));
  if (!pod.sandbox_id().empty()) out += row("Sandbox", pod.sandbox_id().substr(0, 13));
  for (const v1::ContainerInfo& c : pod.containers()) {
    const v1::ContainerResources& r = c.resources();
    std::string line = "request " + cpuAmount(r.cpu_request_milli()) +
                       (r.cpu_limit_milli() > 0 ? ", limit " + cpuAmount(r.cpu_limit_milli()) : "") + ", CPUs " +
                       withCount(c.cpuset_cpus()) + (c.exclusive_cpus().empty() ? ", shared" : ", exclusive");
    if (!c.cpuset_mems().empty()) line += ", mems " + c.cpuset_mems();
    for (const v1::HugepageLimit& pages : r.hugepage_limits()) {
      if (pages.limit_bytes() > 0)
        line += ", " + formatBytes(pages.limit_bytes()) + " of " + pageSize(pages.page_size_bytes()) + " pages";
    }
    if (r.init()) line += ", init";
    if (!r.id().empty()) line += ", id " + r.id().substr(0, 13);  // as crictl shortens it
    out += row("Container " + r.name(), line);
  }
  return out;
}

}  // namespace vri::ctl
