#include "vri/ledger_views.h"

#include "vri/api_convert.h"

namespace vri {

namespace {

std::optional<CgroupPath> scopeOf(const LedgerState& state, const std::string& uuid) {
  const CgroupPath* scope = state.vmScope(uuid);
  return scope != nullptr ? std::optional<CgroupPath>(*scope) : std::nullopt;
}

uint64_t vmMemory(const VmRecord& vm, const LedgerViewFacts& facts) {
  return vm.spec.memoryBytes + facts.vmMemoryOverheadBytes;
}

}  // namespace

void fillNode(const LedgerState& s, const Topology& topology, const NodeFacts& facts, v1::Node& reply) {
  reply.set_online_cpus(topology.onlineCpus().count());
  reply.set_online_cpu_list(topology.onlineCpus().format());
  for (const CpuLocation& cpu : topology.cpus()) {
    v1::CpuInfo& info = *reply.add_cpus();
    info.set_id(cpu.cpu);
    info.set_package(cpu.package);
    info.set_numa_node(cpu.numaNode);
    info.set_core(cpu.core);
  }
  reply.set_numa_nodes(static_cast<int>(topology.numaNodes().size()));
  reply.set_topology_source(topology.source());
  reply.set_packages(static_cast<int>(topology.packages().size()));
  reply.set_cores(static_cast<int>(topology.cores().size()));
  for (const NumaNode& node : topology.numaNodes()) {
    v1::NumaNodeInfo& info = *reply.add_numa();
    info.set_id(node.id);
    info.set_cpus(node.cpus.format());
    info.set_memory_bytes(node.memoryBytes);
    for (const auto& [size, pages] : node.hugepages) (*info.mutable_hugepages())[size] = pages;
    info.set_free_memory_bytes(s.numa.freeOn({node.id}, kRegularMemory));
    info.set_exclusive_cpus_available(s.pool.exclusiveCapacityWithin(node.cpus));
    for (const NumaNode& to : topology.numaNodes())
      (*info.mutable_distances())[to.id] = topology.distance(node.id, to.id);
  }
  reply.set_reserved_cpus(s.reserved().format());
  reply.set_shared_cpus(s.shared().format());
  for (const auto& [owner, grant] : s.grants()) (*reply.mutable_exclusive_cpus())[owner] = grant.all().format();
  reply.set_shared_demand_milli(s.totals.sharedDemandMilli);
  reply.set_shared_tenants(s.totals.sharedTenants);
  reply.set_admitted_memory_bytes(s.totals.admittedMemoryBytes);
  reply.set_pods(static_cast<int>(s.pods.size()));
  reply.set_vms(static_cast<int>(s.vms.size()));
  reply.set_capacity_cpu_milli(facts.allocatable.capacityCpuMilli);
  reply.set_allocatable_cpu_milli(facts.allocatable.allocatableCpuMilli);
  reply.set_capacity_memory_bytes(facts.allocatable.capacityMemoryBytes);
  reply.set_allocatable_memory_bytes(facts.allocatable.allocatableMemoryBytes);
  reply.set_strict_cpu_reservation(facts.strictCpuReservation);
  reply.set_cgroup_version(facts.cgroupVersion == CgroupVersion::kV2 ? "v2" : "v1");
  reply.set_cgroup_driver(std::string(kubeletDriverName(facts.kubeletDriver)));
  for (const auto& [name, value] : facts.options) (*reply.mutable_options())[name] = value;
}

void listTenants(const LedgerState& s, const LedgerViewFacts& facts, v1::ListTenantsRequest::Kind kind,
                 v1::TenantList& reply) {
  const CpuSet shared = s.shared();
  if (kind != v1::ListTenantsRequest::VMS) {
    for (const auto& [uid, pod] : s.pods)
      fillPodInfo(pod, shared, facts.wideShared, facts.namer, *reply.add_tenants()->mutable_pod());
  }
  if (kind != v1::ListTenantsRequest::PODS) {
    for (const auto& [uuid, vm] : s.vms)
      fillVmInfo(vm, shared, scopeOf(s, uuid), vmMemory(vm, facts), *reply.add_tenants()->mutable_vm());
  }
  reply.set_sequence(s.sequence);
}

Result<void> getTenant(const LedgerState& s, const LedgerViewFacts& facts, const v1::GetTenantRequest& r,
                       v1::Tenant& reply) {
  switch (r.key_case()) {
    case v1::GetTenantRequest::kPodUid: {
      const PodRecord* pod = s.pod(r.pod_uid());
      if (!pod) return Error::notFound("pod_uid: no pod " + r.pod_uid() + " is admitted");
      fillPodInfo(*pod, s.shared(), facts.wideShared, facts.namer, *reply.mutable_pod());
      return {};
    }
    case v1::GetTenantRequest::kPod: {
      const PodRecord* pod = s.pod(r.pod());
      if (!pod) {
        for (const auto& [uid, record] : s.pods) {
          if (record.spec.name != r.pod()) continue;
          if (pod) return Error::failedPrecondition("pod: two pods are named " + r.pod());
          pod = &record;
        }
      }
      if (!pod) return Error::notFound("pod: no pod with UID or name " + r.pod());
      fillPodInfo(*pod, s.shared(), facts.wideShared, facts.namer, *reply.mutable_pod());
      return {};
    }
    case v1::GetTenantRequest::kVm: {
      VRI_ASSIGN_OR_RETURN(const VmRecord* vm, findVm(s, r.vm()));
      fillVm(s, facts, *vm, *reply.mutable_vm());
      return {};
    }
    default: return Error::invalidArgument("key: give pod_uid, pod or vm");
  }
}

Result<const VmRecord*> findVm(const LedgerState& state, const std::string& key) {
  if (const VmRecord* vm = state.vm(key)) return vm;
  // By name: names are unique among defined domains, but look them all up to be sure.
  const VmRecord* found = nullptr;
  for (const auto& [uuid, record] : state.vms) {
    if (record.spec.cpu.name != key) continue;
    if (found) return Error::failedPrecondition("vm: two VMs are named " + key);
    found = &record;
  }
  if (!found) return Error::notFound("vm: no VM with UUID or name " + key);
  return found;
}

void fillVm(const LedgerState& state, const LedgerViewFacts& facts, const VmRecord& vm, v1::VmInfo& out) {
  fillVmInfo(vm, state.shared(), scopeOf(state, vm.spec.uuid), vmMemory(vm, facts), out);
}

}  // namespace vri
