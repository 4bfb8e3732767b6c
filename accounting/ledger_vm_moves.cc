// The ledger's live moves of a running VM's threads (vrictl vcpupin and
// emulatorpin): the placement changes, and the request follows it, so that the
// VM reads the same from the metadata VRI writes back into its definition.
#include <algorithm>

#include "accounting/ledger.h"
#include "accounting/tenant_id.h"
#include "base/quote.h"

namespace vri {

namespace {

constexpr int kShared = VmCpuPlacement::kShared;

// Who holds an exclusive CPU, as an operator names it.
std::string holderName(const LedgerState& state, const std::string& owner) {
  const TenantName tenant = parseTenant(owner);
  switch (tenant.kind) {
    case TenantName::Kind::kVm:
      if (const VmRecord* vm = state.vm(tenant.uuid)) return vmDisplayName(vm->spec);
      return "VM " + tenant.uuid;
    case TenantName::Kind::kContainer: {
      const PodRecord* pod = state.pod(tenant.podUid);
      return "container " + tenant.name + " of pod " +
             (pod && !pod->spec.name.empty() ? pod->spec.name : tenant.podUid);
    }
    case TenantName::Kind::kPod: return "pod " + tenant.podUid;
    case TenantName::Kind::kDraining: return "a release whose cgroup writes have not landed yet";
    case TenantName::Kind::kUnknown: break;
  }
  return quoteForMessage(owner);
}

}  // namespace

Result<Decision<VmCpuPlacement>> Ledger::decideMoveVm(const StatePtr& from, const std::string& uuid,
                                                      const std::vector<VmThreadMove>& moves) const {
  const VmRecord* known = from->vm(uuid);
  if (known == nullptr) return Error::notFound("no VM " + quoteForMessage(uuid));
  const std::string who = vmDisplayName(known->spec);
  if (known->defined) {
    return Error::failedPrecondition(who + " is defined but not running: it is placed when it starts");
  }
  if (known->spec.cpu.threadPolicy != ThreadPolicy::kPrefer) {
    return Error::failedPrecondition(who + " holds whole cores (thread policy " +
                                     (known->spec.cpu.threadPolicy == ThreadPolicy::kIsolate ? "isolate" : "require") +
                                     "): its vCPUs cannot move one by one");
  }
  if (!known->placement.heldBack.empty()) {
    return Error::failedPrecondition(who + " holds CPUs " + known->placement.heldBack.format() +
                                     " for its offline vCPUs: move it by editing its <vcpupin>s");
  }
  if (moves.empty()) return Error::invalidArgument("nothing to move");

  VmRecord moved = *known;
  VmCpuPlacement& p = moved.placement;
  int emulator = p.emulatorCpus.empty() ? kShared : *p.emulatorCpus.begin();
  const CpuSet held = known->placement.exclusive;
  const int vcpu_ids = vcpuIdCount(known->spec.cpu);
  for (const VmThreadMove& move : moves) {
    if (move.thread == VmThreadMove::Thread::kVcpu && !p.vcpuCpus.contains(move.id)) {
      if (move.id >= 0 && move.id < vcpu_ids) {
        return Error::failedPrecondition(who + ": vCPU " + std::to_string(move.id) +
                                         " is offline; it runs on the shared pool when brought online");
      }
      return Error::invalidArgument(who + " has no vCPU " + std::to_string(move.id) + " (its vCPUs are 0-" +
                                    std::to_string(vcpu_ids - 1) + ")");
    }
    int& slot = move.thread == VmThreadMove::Thread::kVcpu ? p.vcpuCpus.at(move.id) : emulator;
    const int target = move.cpu.value_or(kShared);
    if (target == slot) continue;
    if (target != kShared) {
      const CpuLocation* location = topology_->cpu(target);
      if (location == nullptr || !topology_->onlineCpus().contains(target)) {
        return Error::invalidArgument("this host has no online CPU " + std::to_string(target) +
                                      " (online: " + topology_->onlineCpus().format() + ")");
      }
      if (from->reserved().contains(target)) {
        return Error::failedPrecondition("CPU " + std::to_string(target) +
                                         " is reserved (reserved: " + from->reserved().format() + ")");
      }
      if (!p.mems.empty() && !p.mems.contains(location->numaNode)) {
        return Error::failedPrecondition(who + "'s memory is bound to NUMA nodes " + p.mems.format() + "; CPU " +
                                         std::to_string(target) + " is on node " + std::to_string(location->numaNode) +
                                         ", and bound memory does not move");
      }
      for (const auto& [id, cpu] : p.iothreadCpus) {
        if (cpu == target) {
          return Error::failedPrecondition("CPU " + std::to_string(target) + " is held by iothread " +
                                           std::to_string(id) + " of " + who);
        }
      }
      // A CPU another of the VM's dedicated threads holds: the two swap.
      int* other = emulator == target ? &emulator : nullptr;
      std::string other_name = "the emulator";
      for (auto& [id, cpu] : p.vcpuCpus) {
        if (cpu == target) {
          other = &cpu;
          other_name = "vCPU " + std::to_string(id);
        }
      }
      if (other != nullptr) {
        if (slot == kShared) {
          return Error::failedPrecondition("CPU " + std::to_string(target) + " is held by " + other_name + " of " +
                                           who + ", and " + move.name() + " has no CPU of its own to swap");
        }
        *other = slot;
      }
    }
    slot = target;
  }
  p.emulatorCpus = emulator == kShared ? CpuSet{} : CpuSet{emulator};
  if (p.vcpuCpus == known->placement.vcpuCpus && p.emulatorCpus == known->placement.emulatorCpus) {
    return unchanged(from, known->placement);
  }
  const CpuSet exclusive = p.exclusive = cpusInUse(p);
  const std::string owner = vmTenant(uuid);
  for (int cpu : exclusive - held) {
    for (const auto& [holder, grant] : from->grants()) {
      if (holder != owner && grant.all().contains(cpu)) {
        return Error::failedPrecondition("CPU " + std::to_string(cpu) + " is held by " + holderName(*from, holder) +
                                         " (free for exclusive use: " + from->pool.freeForExclusive().format() + ")");
      }
    }
  }
  followPlacement(moved.spec.cpu, p);

  // Shared vCPUs that become dedicated leave the shared pool's demand; the ones given back join it.
  const int64_t more = (sharedVcpuCount(p) - sharedVcpuCount(known->placement)) * policy().sharedVcpuMilli;
  NextState n = next(from);
  if (auto granted = regrantVm(n, *from, uuid, p, more); !granted.ok()) return std::move(granted).context(who).error();
  VRI_TRY(checkSharedDemand(n.now(), more, who));  // against the pool the moves leave
  const VmCpuPlacement answer = p;
  n.putVm(std::move(moved));
  return n.finish(answer);
}

Result<void> Ledger::regrantVm(NextState& next, const LedgerState& from, const std::string& uuid,
                               const VmCpuPlacement& placement, int64_t moreSharedDemand) const {
  const std::string owner = vmTenant(uuid);
  next.pool().releaseOwner(owner);
  next.pool().followSharedDemand(
      static_cast<int>(std::max<int64_t>(1, (from.totals.sharedDemandMilli + moreSharedDemand + 999) / 1000)));
  const ExclusiveGrant grant{placement.exclusive, placement.heldBack};
  if (grant.all().empty()) return {};
  return next.pool().assign(owner, grant);
}

}  // namespace vri
