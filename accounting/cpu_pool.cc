#include "accounting/cpu_pool.h"

#include <algorithm>

#include "accounting/cpu_take.h"
#include "base/quote.h"

namespace vri {

Result<CpuPool> CpuPool::create(std::shared_ptr<const Topology> topology, CpuPoolConfig config) {
  if (topology == nullptr) return Error::invalidArgument("CPU pool without a topology");
  if (config.minSharedCpus < 0) return Error::invalidArgument("minimum shared CPUs is negative");
  VRI_ASSIGN_OR_RETURN(CpuPools pools, computeCpuPools(*topology, config.reserved));
  if (pools.shared.count() < config.minSharedCpus) {
    return Error::invalidArgument("the shared pool has " + std::to_string(pools.shared.count()) +
                                  " CPUs, fewer than the minimum of " + std::to_string(config.minSharedCpus));
  }
  return CpuPool(std::move(topology), std::move(config), std::move(pools));
}

CpuSet CpuPool::shared() const { return pools_.shared - owned_; }

CpuSet CpuPool::freeForExclusive() const { return pools_.assignable - owned_; }

int CpuPool::exclusiveCapacity() const {
  return std::max(0, std::min(freeForExclusive().count(), shared().count() - config_.minSharedCpus));
}

int CpuPool::exclusiveCapacityWithin(const CpuSet& cpus) const {
  return std::max(0, std::min((freeForExclusive() & cpus).count(), shared().count() - config_.minSharedCpus));
}

const ExclusiveGrant* CpuPool::grant(const std::string& owner) const {
  const auto it = grants_.find(owner);
  return it == grants_.end() ? nullptr : &it->second;
}

Result<void> CpuPool::checkNewOwner(const std::string& owner) const {
  if (owner.empty()) return Error::invalidArgument("empty owner name");
  if (const ExclusiveGrant* existing = grant(owner)) {
    return Error(ErrorCode::kAlreadyExists,
                 quoteForMessage(owner) + " already holds CPUs " + existing->all().format() + "; release them first");
  }
  return {};
}

Result<void> CpuPool::checkSharedMinimum(int count, const std::string& what) const {
  // Exclusive CPUs always come out of the shared pool, so it shrinks by `count`.
  const int shared_now = shared().count();
  if (count == 0 || shared_now - count >= config_.minSharedCpus) return {};
  return Error::resourceExhausted(
      what + " needs " + std::to_string(count) + " exclusive CPUs; " + std::to_string(freeForExclusive().count()) +
      " are free but " + std::to_string(config_.minSharedCpus) + " of the " + std::to_string(shared_now) +
      " shared CPUs must stay shared, so at most " + std::to_string(exclusiveCapacity()) + " can be taken");
}

Result<CpuSet> CpuPool::allocate(const std::string& owner, const CpuTakeRequest& request, const CpuSet& prefer) {
  VRI_TRY(checkNewOwner(owner));
  const std::string what = quoteForMessage(owner);
  if (request.count <= freeForExclusive().count()) VRI_TRY(checkSharedMinimum(request.count, what));
  const CpuSet preferred = prefer & freeForExclusive();
  Result<CpuSet> chosen = CpuSet();
  if (!preferred.empty() && request.count > 0) {
    CpuTakeRequest first = request;
    first.count = std::min(request.count, preferred.count());
    chosen = takeCpus(*topology_, preferred, first, config_.take);
    if (chosen.ok() && first.count < request.count) {
      CpuTakeRequest rest = request;
      rest.count = request.count - first.count;
      auto more = takeCpus(*topology_, freeForExclusive() - *chosen, rest, config_.take);
      chosen = more.ok() ? Result<CpuSet>(*chosen | *more) : std::move(more);
    }
  } else {
    chosen = takeCpus(*topology_, freeForExclusive(), request, config_.take);
  }
  if (!chosen.ok()) return std::move(chosen).context(what).error();
  grants_[owner] = ExclusiveGrant{*chosen, {}};
  owned_ |= *chosen;
  return chosen;
}

Result<VmCpuPlacement> CpuPool::allocateVm(const std::string& owner, const VmCpuRequest& request) {
  VRI_TRY(checkNewOwner(owner));
  VRI_ASSIGN_OR_RETURN(VmCpuPlacement placement, planVmCpus(*topology_, freeForExclusive(), request, config_.take));
  const CpuSet all = placement.exclusive | placement.heldBack;
  VRI_TRY(checkSharedMinimum(all.count(), "VM " + request.name));
  if (!all.empty()) {
    grants_[owner] = ExclusiveGrant{placement.exclusive, placement.heldBack};
    owned_ |= all;
  }
  return placement;
}

Result<void> CpuPool::assign(const std::string& owner, const ExclusiveGrant& grant) {
  VRI_TRY(checkNewOwner(owner));
  const std::string what = quoteForMessage(owner);
  if (grant.cpus.intersects(grant.heldBack)) {
    return Error::invalidArgument(what + ": CPUs " + (grant.cpus & grant.heldBack).format() +
                                  " are both used and held back");
  }
  const CpuSet all = grant.all();
  if (const CpuSet offline = all - topology_->onlineCpus(); !offline.empty()) {
    return Error::invalidArgument(what + ": CPUs " + offline.format() + " are not online");
  }
  if (const CpuSet reserved = all & pools_.reserved; !reserved.empty()) {
    return Error::failedPrecondition(what + ": CPUs " + reserved.format() + " are reserved");
  }
  if (all.intersects(owned_)) {
    for (const auto& [other, held] : grants_) {
      if (held.all().intersects(all)) {
        return Error::failedPrecondition(what + ": CPUs " + (held.all() & all).format() + " belong to " +
                                         quoteForMessage(other));
      }
    }
  }
  VRI_TRY(checkSharedMinimum(all.count(), what));
  grants_[owner] = grant;
  owned_ |= all;
  return {};
}

Result<void> CpuPool::release(const std::string& owner) {
  const auto it = grants_.find(owner);
  if (it == grants_.end()) return Error::notFound(quoteForMessage(owner) + " holds no exclusive CPUs");
  owned_ -= it->second.all();
  grants_.erase(it);
  return {};
}

Result<void> CpuPool::setMinSharedCpus(int cpus) {
  if (cpus < 0) return Error::invalidArgument("minimum shared CPUs is negative");
  if (cpus > shared().count()) {
    return Error::failedPrecondition("the shared pool has " + std::to_string(shared().count()) +
                                     " CPUs, fewer than the requested minimum of " + std::to_string(cpus));
  }
  config_.minSharedCpus = cpus;
  return {};
}

void CpuPool::followSharedDemand(int cpus) { config_.minSharedCpus = std::clamp(cpus, 0, shared().count()); }

void CpuPool::releaseOwner(const std::string& owner) {
  const auto it = grants_.find(owner);
  if (it == grants_.end()) return;
  owned_ -= it->second.all();
  grants_.erase(it);
}

void CpuPool::holdBack(const std::string& owner, const CpuSet& cpus) {
  releaseOwner(owner);
  const CpuSet taken = cpus & shared();
  grants_[owner] = ExclusiveGrant{{}, taken};
  owned_ |= taken;
}

}  // namespace vri
