// The ledger's decisions about pods and their containers.
#include "accounting/ledger.h"
#include "accounting/spec_amounts.h"
#include "base/amount_limits.h"
#include "base/quote.h"

namespace vri {

namespace {

bool sameResources(const ContainerSpec& a, const ContainerSpec& b) {
  return a.init == b.init && a.cpuRequestMilli == b.cpuRequestMilli && a.cpuLimitMilli == b.cpuLimitMilli &&
         a.memoryLimitBytes == b.memoryLimitBytes && a.memoryRequestBytes == b.memoryRequestBytes &&
         a.hugepageLimits == b.hugepageLimits;
}

std::string milli(int64_t value) { return std::to_string(value) + "m"; }

// The same error with more said at its end.
Error withSuffix(const Error& error, const std::string& suffix) {
  return Error(error.code(), error.message() + suffix, error.sysErrno());
}

std::string sharedDemandNote(const LedgerState& state) {
  return "; " + std::to_string(state.totals.sharedTenants) + " shared tenants request " +
         milli(state.totals.sharedDemandMilli);
}

// The hugepages a container takes: every size with a limit above 0.
MemoryRequest hugepagesOf(const ContainerSpec& container) {
  MemoryRequest request;
  for (const auto& [size, bytes] : container.hugepageLimits) {
    if (bytes > 0) request[size] = bytes;
  }
  return request;
}

ContainerPlacement placementOf(const ContainerRecord& record, const CpuSet& shared) {
  return ContainerPlacement{record.exclusive, record.exclusive.empty() ? shared : record.exclusive,
                            NumaMemory::mems(record.memory)};
}

}  // namespace

Result<ContainerPlacement> Ledger::placeContainer(NextState& next, PodRecord& pod, const ContainerSpec& container,
                                                  const std::string& who, const std::vector<int>* podNodes,
                                                  const CpuSet& handedOn) const {
  const int cpus = exclusiveCpusFor(pod.spec, container);
  ContainerRecord record{container, {}, {}};
  const std::string owner = containerTenant(pod.spec.uid, container.name);
  // Hugepages come from the same per-node books as VMs' pages, on the nodes the container's memory is
  // bound to (cpuset.mems), so that the kernel takes them where the books say.
  const MemoryRequest hugepages = hugepagesOf(container);
  if (cpus == 0) {
    VRI_TRY(checkSharedDemand(next.now(), container.cpuRequestMilli, who));
    if (!hugepages.empty()) {
      std::vector<int> nodes;
      if (podNodes != nullptr) {
        nodes = *podNodes;
      } else {
        VRI_ASSIGN_OR_RETURN(nodes, alignNodes(next.now(), {who, 0, hugepages}, {}));
      }
      auto blocks = next.numa().allocate(owner, nodes, hugepages);
      if (!blocks.ok()) return std::move(blocks).context(who).error();
      record.memory = *blocks;
    }
    pod.containers[container.name] = record;
    return ContainerPlacement{{}, next.now().shared(), NumaMemory::mems(record.memory), true};
  }
  // As kubelet does, an app container first takes the CPUs its pod's init containers held.
  CpuSet reusable = handedOn;
  if (!container.init) {
    for (auto& [name, other] : pod.containers) {
      if (!other.spec.init || other.exclusive.empty()) continue;
      next.pool().releaseOwner(containerTenant(pod.spec.uid, name));
      reusable |= other.exclusive;
    }
  }
  // A pinned container's CPUs, memory and hugepages come from the same NUMA nodes.
  const uint64_t pinned_memory = container.memoryLimitBytes.value_or(0);
  const bool pinned = policy().pinGuaranteedMemory && pinned_memory > 0;
  MemoryRequest memory_request = hugepages;
  if (pinned) memory_request[kRegularMemory] = pinned_memory;
  const bool bound = !memory_request.empty();
  std::vector<int> nodes;
  if (podNodes != nullptr) {
    nodes = *podNodes;
  } else if (bound || policy().topologyManager.policy != TopologyPolicy::kNone) {
    // The topology manager's policy applies to every container with exclusive CPUs, as in kubelet.
    VRI_ASSIGN_OR_RETURN(nodes, alignNodes(next.now(), {who, cpus, memory_request}, {}));
  }
  auto chosen = next.pool().allocate(owner, {cpus, nodes}, reusable);
  if (!chosen.ok()) return withSuffix(chosen.error(), sharedDemandNote(next.now()));
  if (bound) {
    auto blocks = next.numa().allocate(owner, nodes, memory_request);
    if (!blocks.ok()) return std::move(blocks).context(who).error();
    record.memory = *blocks;
  }
  for (auto& [name, other] : pod.containers) {
    if (other.spec.init && !container.init) other.exclusive = CpuSet();  // handed on
  }
  record.exclusive = *chosen;
  pod.containers[container.name] = record;
  return ContainerPlacement{*chosen, *chosen, NumaMemory::mems(record.memory), true};
}

Result<ContainerPlacement> Ledger::admitInto(NextState& next, const PodSpec& pod, const ContainerSpec& container,
                                             const std::vector<int>* podNodes,
                                             const std::vector<std::string>& finished) const {
  VRI_TRY(validatePodUid(pod.uid));
  VRI_TRY(validateContainerName(container.name));
  VRI_TRY(checkPodAmounts(pod));
  VRI_TRY(checkContainerAmounts(container));
  if (!container.id.empty()) {
    VRI_TRY(validateContainerId(container.id));
    VRI_TRY(checkRuntimeIdFree(next.now(), container.id, RuntimeOwner{pod.uid, container.name}));
  }
  const std::string who = "container " + (pod.name.empty() ? pod.uid : pod.name) + "/" + container.name;
  const PodRecord* existing = next.now().pod(pod.uid);
  if (existing != nullptr) VRI_TRY(checkSameQos(*existing, pod));
  if (existing != nullptr) {
    const auto known = existing->containers.find(container.name);
    if (known != existing->containers.end()) {
      if (!sameResources(known->second.spec, container)) {
        return Error::failedPrecondition(
            who +
            " is admitted already, with other resources: container names are unique in a pod, so a second "
            "container of that name is refused (ResizeContainer changes the admitted one)");
      }
      // One that handed its CPUs on (it had finished) and runs again is placed anew below.
      const bool handed_on = known->second.exclusive.empty() && exclusiveCpusFor(existing->spec, container) > 0;
      if (!handed_on) {
        const ContainerPlacement placement = placementOf(known->second, next.now().shared());
        // A retry, or kubelet recreating the container under a new id: same placement.
        if (known->second.spec.id != container.id && !container.id.empty()) {
          PodRecord updated = *existing;
          updated.containers[container.name].spec.id = container.id;
          next.putPod(std::move(updated));
        }
        return placement;
      }
    }
  }
  PodRecord updated = existing != nullptr ? *existing : PodRecord{pod, {}, {}};
  if (existing == nullptr && pod.overheadCpuMilli > 0) {
    // The pod's overhead runs in its own cgroup, on the shared pool: it is admitted with the pod.
    VRI_TRY(checkSharedDemand(next.now(), pod.overheadCpuMilli,
                              "pod " + (pod.name.empty() ? pod.uid : pod.name) + "'s overhead"));
    next.putPod(PodRecord{pod, {}, {}});
  }
  const uint64_t memory_before = existing != nullptr ? podMemoryBytes(*existing) : 0;
  PodRecord trial = updated;
  trial.containers[container.name] = ContainerRecord{container, {}, {}};
  VRI_TRY(checkMemory(next.now(), podMemoryBytes(trial) - memory_before, who));
  // Finished containers hand their CPUs on: to this one first, the rest back to the shared pool.
  CpuSet handed_on;
  for (const std::string& name : finished) {
    const auto done = updated.containers.find(name);
    if (name == container.name || done == updated.containers.end() || done->second.exclusive.empty()) continue;
    const std::string owner = containerTenant(pod.uid, name);
    next.pool().releaseOwner(owner);
    if (!done->second.memory.empty()) VRI_TRY(next.numa().release(owner));
    handed_on |= done->second.exclusive;
    done->second.exclusive = CpuSet();
    done->second.memory = {};
  }
  VRI_ASSIGN_OR_RETURN(ContainerPlacement placement,
                       placeContainer(next, updated, container, who, podNodes, handed_on));
  next.putPod(std::move(updated));
  return placement;
}

Result<void> Ledger::checkSameQos(const PodRecord& known, const PodSpec& pod) const {
  if (known.spec.outsideKubeletTree != pod.outsideKubeletTree) {
    const auto where = [](bool outside) { return outside ? "outside kubelet's tree" : "in kubelet's tree"; };
    return Error::failedPrecondition("pod " + quoteForMessage(pod.uid) + " was admitted " +
                                     where(known.spec.outsideKubeletTree) + ", not " + where(pod.outsideKubeletTree));
  }
  if (known.spec.qos == pod.qos) return {};
  return Error::failedPrecondition("pod " + quoteForMessage(pod.uid) + " was admitted as " +
                                   std::string(qosClassName(known.spec.qos)) + ", not " +
                                   std::string(qosClassName(pod.qos)));
}

Result<void> Ledger::checkRuntimeIdFree(const LedgerState& state, const std::string& id,
                                        const RuntimeOwner& owner) const {
  const RuntimeOwner* holder = state.runtimeOwner(id);
  if (holder == nullptr || *holder == owner) return {};
  const std::string what = holder->isSandbox() ? "the sandbox of pod " + quoteForMessage(holder->podUid)
                                               : "container " + quoteForMessage(holder->container) + " of pod " +
                                                     quoteForMessage(holder->podUid);
  return Error::failedPrecondition("runtime id " + quoteForMessage(id) + " belongs to " + what);
}

namespace {

// A container adopted from its cgroup alone (vrid's start-up, --init-ledger) is named by its runtime
// id, and its pod "adopted/<uid>": what the runtime later says of them names them.
bool namedByItsId(const ContainerRecord& c) { return !c.spec.id.empty() && c.spec.name == c.spec.id; }
bool adoptedFromCgroups(const PodRecord& pod) { return pod.spec.name == "adopted/" + pod.spec.uid; }

// The record of `pod` adopted from its cgroups that holds runtime id `id` under that id as its name.
const ContainerRecord* adoptedUnderItsId(const PodRecord* pod, const std::string& id) {
  if (pod == nullptr || id.empty()) return nullptr;
  const auto found = pod->containers.find(id);
  return found != pod->containers.end() && namedByItsId(found->second) ? &found->second : nullptr;
}

// Takes the container `name` out of `pod` and its CPUs and memory out of the books, within `n`.
Result<void> dropContainer(NextState& n, PodRecord& pod, const std::string& name) {
  const auto found = pod.containers.find(name);
  if (found == pod.containers.end()) return {};
  const std::string owner = containerTenant(pod.spec.uid, name);
  n.pool().releaseOwner(owner);
  if (!found->second.memory.empty()) VRI_TRY(n.numa().release(owner));
  pod.containers.erase(found);
  return {};
}

}  // namespace

Result<Decision<bool>> Ledger::decideBindSandbox(const StatePtr& from, const PodSpec& pod,
                                                 const std::string& sandboxId) const {
  VRI_TRY(validatePodUid(pod.uid));
  const PodRecord* existing = from->pod(pod.uid);
  // A pod adopted from its cgroups, whose sandbox was taken for a container: the runtime names both.
  const ContainerRecord* sandboxAsContainer =
      existing != nullptr && adoptedFromCgroups(*existing) ? adoptedUnderItsId(existing, sandboxId) : nullptr;
  if (!sandboxId.empty()) {
    VRI_TRY(validateContainerId(sandboxId).context("sandbox id"));
    if (sandboxAsContainer == nullptr) VRI_TRY(checkRuntimeIdFree(*from, sandboxId, RuntimeOwner{pod.uid, ""}));
  }
  VRI_TRY(checkPodAmounts(pod));
  if (existing != nullptr) {
    VRI_TRY(checkSameQos(*existing, pod));
    const bool renamed = adoptedFromCgroups(*existing) && !sandboxId.empty() && !pod.name.empty();
    if (!renamed && (sandboxId.empty() || existing->sandboxId == sandboxId)) return unchanged(from, false);
    NextState n = next(from);
    PodRecord updated = *existing;
    updated.sandboxId = sandboxId;  // a re-created sandbox: the pod keeps what it holds
    if (renamed) updated.spec.name = pod.name;
    if (sandboxAsContainer != nullptr) VRI_TRY(dropContainer(n, updated, sandboxId));
    n.putPod(std::move(updated));
    return n.finish(false);
  }
  PodRecord record{pod, {}, sandboxId};
  VRI_TRY(checkMemory(*from, podMemoryBytes(record), "pod " + (pod.name.empty() ? pod.uid : pod.name)));
  // The pod's overhead runs in its own cgroup, on the shared pool.
  VRI_TRY(
      checkSharedDemand(*from, pod.overheadCpuMilli, "pod " + (pod.name.empty() ? pod.uid : pod.name) + "'s overhead"));
  NextState n = next(from);
  n.putPod(std::move(record));
  return n.finish(true);
}

Result<Decision<ContainerPlacement>> Ledger::decideAdmitContainer(const StatePtr& from, const PodSpec& pod,
                                                                  const ContainerSpec& container,
                                                                  const std::vector<std::string>& finished) const {
  NextState n = next(from);
  VRI_ASSIGN_OR_RETURN(ContainerPlacement placement, admitInto(n, pod, container, nullptr, finished));
  if (n.delta().empty()) return unchanged(from, std::move(placement));
  Decision<ContainerPlacement> decision = n.finish(std::move(placement));
  if (decision.answer.exclusive.empty()) decision.answer.cpus = decision.after->shared();
  return decision;
}

Result<Decision<std::vector<ContainerPlacement>>> Ledger::decideAdmitPod(
    const StatePtr& from, const PodSpec& pod, const std::vector<ContainerSpec>& containers) const {
  NextState n = next(from);
  // The pod's exclusive CPUs and pinned memory, aligned at once.
  VRI_TRY(checkPodAmounts(pod));
  int64_t cpus = 0;
  uint64_t memory = 0;
  MemoryRequest hugepages;  // every container's, init containers' too: all of them are admitted at once
  for (const ContainerSpec& c : containers) {
    VRI_TRY(checkContainerAmounts(c).context("container " + quoteForMessage(c.name)));
    for (const auto& [size, bytes] : hugepagesOf(c)) {
      VRI_ASSIGN_OR_RETURN(hugepages[size], addBytes("pod hugepages", hugepages[size], bytes));
    }
    const int count = exclusiveCpusFor(pod, c);
    if (count == 0 || c.init) continue;  // init containers hand their CPUs on; the app containers count
    cpus += count;
    if (policy().pinGuaranteedMemory) {
      VRI_ASSIGN_OR_RETURN(memory, addBytes("pod memory", memory, c.memoryLimitBytes.value_or(0)));
    }
  }
  const std::string pod_who = "pod " + (pod.name.empty() ? pod.uid : pod.name);
  if (cpus > topology_->onlineCpus().count())
    return Error::resourceExhausted(pod_who + " needs " + std::to_string(cpus) + " exclusive CPUs; the node has " +
                                    std::to_string(topology_->onlineCpus().count()));
  std::vector<int> nodes;
  const bool align =
      !hugepages.empty() ||
      (cpus > 0 && (policy().pinGuaranteedMemory || policy().topologyManager.policy != TopologyPolicy::kNone));
  if (align) {
    MemoryRequest request = hugepages;
    if (memory > 0) request[kRegularMemory] = memory;
    VRI_ASSIGN_OR_RETURN(nodes, alignNodes(*from, {pod_who, static_cast<int>(cpus), request}, {}));
  }
  std::vector<ContainerPlacement> placements;
  for (const ContainerSpec& c : containers) {
    // All or nothing: a refusal drops the whole working copy.
    VRI_ASSIGN_OR_RETURN(ContainerPlacement placed, admitInto(n, pod, c, align ? &nodes : nullptr));
    placements.push_back(std::move(placed));
  }
  if (n.delta().empty()) return unchanged(from, std::move(placements));
  Decision<std::vector<ContainerPlacement>> decision = n.finish(std::move(placements));
  for (ContainerPlacement& p : decision.answer) {
    if (p.exclusive.empty()) p.cpus = decision.after->shared();
  }
  return decision;
}

Result<Decision<ContainerPlacement>> Ledger::decideResizeContainer(const StatePtr& from, const std::string& podUid,
                                                                   const ContainerSpec& request) const {
  VRI_TRY(checkContainerAmounts(request));
  const PodRecord* pod = from->pod(podUid);
  if (pod == nullptr) return Error::notFound("no pod " + quoteForMessage(podUid));
  const auto known = pod->containers.find(request.name);
  if (known == pod->containers.end()) {
    return Error::notFound("pod " + quoteForMessage(podUid) + " has no container " + quoteForMessage(request.name));
  }
  const std::string who = "container " + pod->spec.name + "/" + request.name;
  const ContainerRecord& before = known->second;
  ContainerSpec container = request;
  if (container.id.empty()) container.id = before.spec.id;  // the runtime id stays bound
  if (container.id != before.spec.id) {
    return Error::failedPrecondition(who + " runs as " + quoteForMessage(before.spec.id) + ", not " +
                                     quoteForMessage(container.id));
  }
  // A resize that does not name the hugepages (an undo, a runtime's update) keeps them.
  if (container.hugepageLimits.empty()) container.hugepageLimits = before.spec.hugepageLimits;
  if (hugepagesOf(container) != hugepagesOf(before.spec)) {
    return Error::failedPrecondition(who +
                                     ": hugepages are not resized in place (kubelet does not either); "
                                     "release the container and admit it again");
  }
  if (!before.memory.empty()) {
    return Error::failedPrecondition(who + " has NUMA-bound memory (" +
                                     (hugepagesOf(before.spec).empty() ? "pinned" : "hugepages") +
                                     "); release it and admit it again to change its size");
  }
  PodRecord updated = *pod;
  updated.containers.erase(container.name);
  const uint64_t memory_before = podMemoryBytes(*pod);
  PodRecord trial = updated;
  trial.containers[container.name] = ContainerRecord{container, {}, {}};
  const uint64_t memory_after = podMemoryBytes(trial);
  if (memory_after > memory_before) VRI_TRY(checkMemory(*from, memory_after - memory_before, who));

  // The old placement out of the books (keeping its CPUs where it can), placed anew.
  NextState n = next(from);
  const std::string owner = containerTenant(podUid, container.name);
  n.pool().releaseOwner(owner);
  n.putPod(updated);  // without the container: its shared demand is out of the totals
  ContainerPlacement placed;
  const int cpus = exclusiveCpusFor(updated.spec, container);
  if (cpus == 0) {
    VRI_ASSIGN_OR_RETURN(placed, placeContainer(n, updated, container, who, nullptr, {}));
  } else {
    auto chosen = n.pool().allocate(owner, {cpus, {}}, before.exclusive);
    if (!chosen.ok()) return std::move(chosen).context(who).error();
    updated.containers[container.name] = ContainerRecord{container, *chosen, {}};
    placed = ContainerPlacement{*chosen, *chosen, {}};
  }
  n.putPod(std::move(updated));
  Decision<ContainerPlacement> decision = n.finish(std::move(placed));
  if (decision.answer.exclusive.empty()) decision.answer.cpus = decision.after->shared();
  return decision;
}

Result<Decision<bool>> Ledger::decideReleaseContainer(const StatePtr& from, const std::string& podUid,
                                                      const std::string& name, const ReleaseGuard& guard) const {
  const PodRecord* pod = from->pod(podUid);
  if (pod == nullptr) {
    if (guard.set()) return unchanged(from, false);
    return Error::notFound("no pod " + quoteForMessage(podUid));
  }
  const auto known = pod->containers.find(name);
  if (known == pod->containers.end()) {
    if (guard.set()) return unchanged(from, false);
    return Error::notFound("pod " + quoteForMessage(podUid) + " has no container " + quoteForMessage(name));
  }
  // kubelet removes a dead container after creating its replacement: that id is no longer the container's.
  if (guard.set() && !guard.holdsFor(known->second.spec.id)) return unchanged(from, false);
  NextState n = next(from);
  const std::string owner = containerTenant(podUid, name);
  n.pool().releaseOwner(owner);
  if (!known->second.memory.empty()) VRI_TRY(n.numa().release(owner));
  PodRecord updated = *pod;
  updated.containers.erase(name);
  n.putPod(std::move(updated));
  return n.finish(true);
}

Result<Decision<bool>> Ledger::decideReleasePod(const StatePtr& from, const std::string& podUid,
                                                const ReleaseGuard& guard) const {
  const PodRecord* pod = from->pod(podUid);
  if (pod == nullptr) {
    if (guard.set()) return unchanged(from, false);
    return Error::notFound("no pod " + quoteForMessage(podUid));
  }
  // An old sandbox removed after a new one exists leaves the pod alone; so does
  // undoing a sandbox admit once the pod has a sandbox or containers.
  if (guard.set() && (!guard.holdsFor(pod->sandboxId) || (guard.onlyUnbound && !pod->containers.empty())))
    return unchanged(from, false);
  NextState n = next(from);
  for (const auto& [name, c] : pod->containers) {
    const std::string owner = containerTenant(podUid, name);
    n.pool().releaseOwner(owner);
    if (!c.memory.empty()) VRI_TRY(n.numa().release(owner));
  }
  n.erasePod(podUid);
  return n.finish(true);
}

Result<Decision<bool>> Ledger::decideAdoptContainer(const StatePtr& from, const PodSpec& pod,
                                                    const ContainerSpec& container, const CpuSet& exclusive,
                                                    const std::vector<int>& memoryNodes) const {
  VRI_TRY(validatePodUid(pod.uid));
  VRI_TRY(checkPodAmounts(pod));
  VRI_TRY(checkContainerAmounts(container));
  VRI_TRY(validateContainerName(container.name));
  const PodRecord* known = from->pod(pod.uid);
  // Adopted from its cgroup under its id before: taken again under the name the runtime gives it, on
  // the same CPUs, in one decision (its grant moves to the new name; nothing is written).
  const ContainerRecord* underItsId = container.name != container.id ? adoptedUnderItsId(known, container.id) : nullptr;
  if (!container.id.empty()) {
    VRI_TRY(validateContainerId(container.id));
    if (underItsId == nullptr) VRI_TRY(checkRuntimeIdFree(*from, container.id, RuntimeOwner{pod.uid, container.name}));
  }
  if (known != nullptr) VRI_TRY(checkSameQos(*known, pod));
  PodRecord updated = known != nullptr ? *known : PodRecord{pod, {}, {}};
  if (updated.containers.count(container.name)) {
    return Error(ErrorCode::kAlreadyExists, "container " + container.name + " of pod " + pod.uid + " is known");
  }
  // Bound to some NUMA nodes (its cpuset.mems, or where it was adopted under its id): its memory and
  // hugepages are taken there, and every one of those nodes stays in its cpuset.mems.
  std::vector<int> boundTo = memoryNodes;
  if (boundTo.empty() && underItsId != nullptr)
    for (const auto& [node, resources] : underItsId->memory) boundTo.push_back(node);
  NextState n = next(from);
  if (underItsId != nullptr) VRI_TRY(dropContainer(n, updated, container.id));
  const std::string owner = containerTenant(pod.uid, container.name);
  if (!exclusive.empty()) VRI_TRY(n.pool().assign(owner, {exclusive, {}}));
  // Its hugepages are taken from the books as an admission takes them: on its CPUs' NUMA nodes when it
  // has CPUs of its own, otherwise where they fit (the kernel holds them already; the books must too).
  MemoryBlocks memory;
  const MemoryRequest hugepages = hugepagesOf(container);
  const std::string who = "container " + (pod.name.empty() ? pod.uid : pod.name) + "/" + container.name;
  if (!boundTo.empty()) {
    MemoryRequest request = hugepages;
    // Its limit when known; 0 bytes otherwise, which still records the nodes (and so its cpuset.mems).
    request[kRegularMemory] = container.memoryLimitBytes.value_or(0);
    auto blocks = n.numa().allocateParts(owner, {{boundTo, request, "its cpuset.mems nodes"}});
    if (!blocks.ok()) return std::move(blocks).context(who + " not adopted").error();
    memory = *blocks;
  } else if (!hugepages.empty()) {
    std::vector<int> nodes;
    for (const NumaNode& node : topology_->numaNodes()) {
      if (node.cpus.intersects(exclusive)) nodes.push_back(node.id);
    }
    if (nodes.empty()) {
      VRI_ASSIGN_OR_RETURN(nodes, alignNodes(*from, {who, 0, hugepages}, {}));
    }
    auto blocks = n.numa().allocate(owner, nodes, hugepages);
    if (!blocks.ok()) return std::move(blocks).context(who + " not adopted").error();
    memory = *blocks;
  }
  updated.containers[container.name] = ContainerRecord{container, exclusive, memory};
  n.putPod(std::move(updated));
  return n.finish(true);
}

}  // namespace vri
