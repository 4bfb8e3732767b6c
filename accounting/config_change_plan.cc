#include "accounting/config_change_plan.h"

#include <algorithm>

#include "accounting/numa_memory.h"
#include "accounting/tenant_id.h"

namespace vri {

namespace {

// The NUMA nodes `cpus` lie on.
std::vector<int> nodesOf(const Topology& topology, const CpuSet& cpus) {
  std::vector<int> nodes;
  for (const NumaNode& node : topology.numaNodes())
    if (node.cpus.intersects(cpus)) nodes.push_back(node.id);
  return nodes;
}

std::string nodeList(const std::vector<int>& nodes) {
  std::string out;
  for (int node : nodes) out += (out.empty() ? "" : ",") + std::to_string(node);
  return out;
}

// Why the new topology policy would not admit a placement as it stands, or empty. Only
// single-numa-node refuses outright what spans NUMA nodes; the other policies prefer, and keep.
std::string alignmentBreach(const Topology& topology, const LedgerConfig& next, const CpuSet& cpus,
                            const CpuSet& mems) {
  if (next.topologyManager.policy != TopologyPolicy::kSingleNumaNode) return "";
  std::vector<int> nodes = nodesOf(topology, cpus);
  for (int node : mems) {
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  if (nodes.size() <= 1) return "";
  return "it spans NUMA nodes " + nodeList(nodes) + ", and single-numa-node wants one";
}

// The ledger as the new policy would load it: the same records, its own pools.
Result<std::unique_ptr<Ledger>> reloadUnder(const LedgerState& now, std::shared_ptr<const Topology> topology,
                                            const LedgerConfig& next) {
  auto store = std::make_unique<MemoryLedgerStore>();
  LedgerChange all;
  for (const auto& [uid, pod] : now.pods) all.putPods.push_back(pod);
  for (const auto& [uuid, vm] : now.vms) all.putVms.push_back(vm);
  VRI_TRY(store->apply(all));
  return Ledger::open(std::move(topology), next, std::move(store));
}

}  // namespace

Result<ConfigChangePlan> planConfigChange(const LedgerState& now, std::shared_ptr<const Topology> topology,
                                          const LedgerConfig& next) {
  const Topology& topo = *topology;
  VRI_ASSIGN_OR_RETURN(std::unique_ptr<Ledger> candidate, reloadUnder(now, topology, next));
  ConfigChangePlan plan;
  plan.reservedBefore = now.reserved();
  plan.sharedBefore = now.shared();
  const StatePtr loaded = candidate->state();
  plan.reservedAfter = loaded->reserved();

  // Containers first, then VMs; each in the ledger's order, so that a plan is the same every time.
  struct ToPlace {
    TenantChange change;
    const PodRecord* pod = nullptr;
    const ContainerRecord* container = nullptr;
    const VmRecord* vm = nullptr;
  };
  std::vector<ToPlace> toPlace;
  for (const auto& [uid, pod] : now.pods) {
    for (const auto& [name, container] : pod.containers) {
      const CpuSet mems = NumaMemory::mems(container.memory);
      if (container.exclusive.empty() && container.memory.empty()) continue;  // shared: it follows the pool
      TenantChange change;
      change.tenant = containerTenant(uid, name);
      change.name = pod.spec.name + " " + name;
      change.cpusBefore = container.exclusive;
      change.memsBefore = mems;
      const PodRecord* kept = loaded->pod(uid);
      if (kept == nullptr || !kept->containers.count(name)) {
        change.reason =
            "its CPUs or memory do not fit the new policy's pools (reserved CPUs " + plan.reservedAfter.format() + ")";
      } else {
        change.reason = alignmentBreach(topo, next, container.exclusive, mems);
        if (!change.reason.empty())
          VRI_TRY(candidate->apply(&Ledger::decideReleaseContainer, uid, name, ReleaseGuard{}).context(change.name));
      }
      if (change.reason.empty()) {
        ++plan.stays;
        continue;
      }
      toPlace.push_back({std::move(change), &pod, &container, nullptr});
    }
  }
  for (const auto& [uuid, vm] : now.vms) {
    if (vm.placement.exclusive.empty() && vm.memory.empty()) continue;
    TenantChange change;
    change.tenant = vmTenant(uuid);
    change.name = "VM " + vm.spec.cpu.name;
    change.cpusBefore = vm.placement.exclusive;
    change.memsBefore = vm.placement.mems;
    if (loaded->vm(uuid) == nullptr) {
      change.reason =
          "its CPUs or memory do not fit the new policy's pools (reserved CPUs " + plan.reservedAfter.format() + ")";
    } else {
      change.reason = alignmentBreach(topo, next, vm.placement.exclusive, vm.placement.mems);
      if (!change.reason.empty()) VRI_TRY(candidate->apply(&Ledger::decideReleaseVm, uuid).context(change.name));
    }
    if (change.reason.empty()) {
      ++plan.stays;
      continue;
    }
    toPlace.push_back({std::move(change), nullptr, nullptr, &vm});
  }

  // Placed again, one by one, as the new policy would place them now.
  const auto record = [](TenantChange& change, const auto& placed) {
    if (placed.ok()) {
      change.cpusAfter = placed->exclusive;
      change.memsAfter = placed->mems;
      return;
    }
    change.verdict = TenantChange::Verdict::kBreaks;
    change.reason += "; and it cannot be placed again: " + placed.error().message();
  };
  for (ToPlace& each : toPlace) {
    if (each.container != nullptr)
      record(each.change, candidate->apply(&Ledger::decideAdmitContainer, each.pod->spec, each.container->spec,
                                           std::vector<std::string>{}));
    else
      record(each.change, candidate->apply(&Ledger::decideAdmitVm, each.vm->spec));
    plan.changes.push_back(std::move(each.change));
  }
  plan.after = candidate->state();
  plan.sharedAfter = plan.after->shared();
  return plan;
}

}  // namespace vri
