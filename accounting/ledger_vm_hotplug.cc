// The ledger's answer to vCPUs brought online or taken offline in a running VM
// (virsh setvcpus --live): no hook runs then, so vrid's libvirt side notices
// and tells the ledger which vCPU ids run now.
#include <algorithm>
#include <set>

#include "accounting/ledger.h"
#include "base/quote.h"

namespace vri {

namespace {

constexpr int kShared = VmCpuPlacement::kShared;

}  // namespace

Result<Decision<VcpusOnline>> Ledger::decideVcpusOnline(const StatePtr& from, const std::string& uuid,
                                                        const std::vector<int>& online) const {
  const VmRecord* known = from->vm(uuid);
  if (known == nullptr) return Error::notFound("no VM " + quoteForMessage(uuid));
  const std::string who = vmDisplayName(known->spec);
  if (known->defined) return Error::failedPrecondition(who + " is defined but not running");
  const int ids = vcpuIdCount(known->spec.cpu);
  if (online.empty()) return Error::invalidArgument(who + ": no vCPU online");
  for (size_t i = 0; i < online.size(); ++i) {
    if (online[i] < 0 || online[i] >= ids || (i > 0 && online[i] <= online[i - 1])) {
      return Error::invalidArgument(who + ": vCPU ids must be ascending, each below " + std::to_string(ids));
    }
  }
  if (online == onlineVcpuIds(known->spec.cpu)) return unchanged(from, VcpusOnline{known->placement, {}});

  // Placed with CPUs of their own where the request gives them one, or (when the
  // shared pool cannot spare them) all on the shared pool.
  const auto place = [&](bool ownCpus) -> Result<std::pair<VmRecord, VcpusOnline>> {
    VmRecord changed = *known;
    VmCpuRequest& request = changed.spec.cpu;
    VmCpuPlacement& p = changed.placement;
    VcpusOnline answer;
    const std::set<int> now(online.begin(), online.end());
    // Taken offline: what they held goes back (a user's pin keeps its CPU held back for the vCPU).
    for (auto it = p.vcpuCpus.begin(); it != p.vcpuCpus.end();) {
      if (now.contains(it->first)) {
        ++it;
        continue;
      }
      if (it->second != kShared && !request.pinnedVcpuCpus.empty()) p.heldBack.add(it->second);
      it = p.vcpuCpus.erase(it);
    }
    // Brought online: a CPU of its own when the request gives it one and one is free, else the shared pool.
    CpuSet free = from->pool.freeForExclusive();
    if (!p.mems.empty()) {
      CpuSet on_nodes;
      for (int node : p.mems) {
        if (const NumaNode* n = topology_->numaNode(node)) on_nodes |= n->cpus;
      }
      free &= on_nodes;
    }
    for (int id : online) {
      if (p.vcpuCpus.contains(id)) continue;
      int cpu = kShared;
      if (dedicatesVcpu(request, id)) {
        const std::string why =
            !ownCpus       ? "the shared pool cannot spare a CPU"
            : free.empty() ? "no CPU is free for it" + (p.mems.empty() ? "" : " on NUMA nodes " + p.mems.format())
                           : "";
        if (!request.pinnedVcpuCpus.empty() && ownCpus) {
          cpu = request.pinnedVcpuCpus[id];  // held back for it while it was offline
          p.heldBack.remove(cpu);
        } else if (why.empty()) {
          cpu = free.first();
          free.remove(cpu);
        } else {
          answer.notes.push_back("vCPU " + std::to_string(id) + " runs on the shared pool: " + why);
        }
      }
      p.vcpuCpus[id] = cpu;
    }
    p.exclusive = cpusInUse(p);
    request.vcpus = static_cast<int>(online.size());
    request.onlineVcpus = online;
    request.maxVcpus = ids;
    // Dedicated by policy, shared in fact: the request says so (mixed), as VRI's metadata will.
    if (!answer.notes.empty() && request.pinnedVcpuCpus.empty()) followPlacement(request, p);
    return std::pair{std::move(changed), std::move(answer)};
  };

  NextState n = next(from);
  Result<std::pair<VmRecord, VcpusOnline>> placed = Error::internal("not placed");
  int64_t more = 0;
  for (bool own : {true, false}) {
    n = next(from);
    placed = place(own);
    if (!placed.ok()) return placed.error();
    const VmCpuPlacement& p = placed->first.placement;
    more = (sharedVcpuCount(p) - sharedVcpuCount(known->placement)) * policy().sharedVcpuMilli;
    auto assigned = regrantVm(n, *from, uuid, p, more);
    if (assigned.ok()) break;
    if (!own || assigned.error().code() != ErrorCode::kResourceExhausted) {
      return std::move(assigned).context(who).error();
    }
  }
  VRI_TRY(checkSharedDemand(n.now(), more, who));
  VcpusOnline answer = std::move(placed->second);
  answer.placement = placed->first.placement;
  n.putVm(std::move(placed->first));
  return n.finish(answer);
}

}  // namespace vri
