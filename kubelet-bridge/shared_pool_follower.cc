#include "kubelet-bridge/shared_pool_follower.h"

#include "kubelet-bridge/runtime_values.h"

namespace vri {

SharedPoolFollower::SharedPoolFollower(VridClient& vrid, RuntimeClient& runtime, SharedPoolFollowerOptions options)
    : vrid_(vrid), runtime_(runtime), options_(std::move(options)), pool_(options_.workers) {}

SharedPoolFollower::~SharedPoolFollower() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    wanted_.clear();
  }
  wake_.notify_all();
  // pool_ goes first (declared last): queued updates return at once, those in flight finish.
}

void SharedPoolFollower::restart() {
  MutexLock lock(mutex_);
  listed_ = 0;
  wanted_.clear();
}

bool SharedPoolFollower::take(uint64_t sequence) {
  MutexLock lock(mutex_);
  if (sequence < listed_) return false;
  listed_ = sequence;
  return true;
}

void SharedPoolFollower::follow(const v1::TenantList& tenants) {
  MutexLock lock(mutex_);
  if (stopping_) return;
  for (const v1::Tenant& tenant : tenants.tenants()) {
    if (tenant.pod().sandbox_id().empty()) continue;  // not run through a CRI shim: not the runtime's to update
    for (const v1::ContainerInfo& c : tenant.pod().containers()) {
      if (c.resources().id().empty() || c.allocation().exclusive()) continue;  // only shared containers follow
      const Wanted wanted{tenant.pod().uid(), tenants.sequence()};
      auto [entry, inserted] = wanted_.try_emplace(c.resources().id(), wanted);
      if (!inserted && entry->second.sequence <= wanted.sequence) entry->second = wanted;  // the latest wins
    }
  }
  dispatch();
}

bool SharedPoolFollower::idle() const {
  MutexLock lock(mutex_);
  return wanted_.empty() && inFlight_.empty();
}

void SharedPoolFollower::dispatch() {
  for (auto it = wanted_.begin(); it != wanted_.end();) {
    if (inFlight_.count(it->first)) {
      ++it;  // its update in flight goes first; this one follows it
      continue;
    }
    inFlight_.insert(it->first);
    pool_.post([this, id = it->first, wanted = std::move(it->second)] {
      apply(id, wanted);
      MutexLock lock(mutex_);
      inFlight_.erase(id);
      if (!stopping_) dispatch();
    });
    it = wanted_.erase(it);
  }
}

Result<std::optional<v1::ContainerAllocation>> SharedPoolFollower::current(const std::string& id,
                                                                           const std::string& podUid) {
  auto tenant = vrid_.getPod(scope(), podUid);
  if (!tenant.ok()) {
    if (tenant.error().code() == ErrorCode::kNotFound) {
      return std::optional<v1::ContainerAllocation>();  // released: nothing to follow
    }
    return tenant.error();
  }
  for (const v1::ContainerInfo& c : tenant->pod().containers()) {
    if (c.resources().id() == id && !c.allocation().exclusive()) return std::optional(c.allocation());
  }
  return std::optional<v1::ContainerAllocation>();  // exclusive now, or gone from the pod
}

void SharedPoolFollower::retryLater(const std::string& id, const Wanted& wanted, const std::string& why) {
  MutexLock lock(mutex_);
  options_.log(why + "; trying again");
  const Clock::TimePoint retry_at = options_.clock->now() + options_.retryAfter;
  while (!stopping_ && !options_.clock->waitUntil(lock, wake_, retry_at)) {
  }
  if (!stopping_ && !wanted_.count(id)) wanted_.emplace(id, wanted);  // dispatched once this one leaves
}

void SharedPoolFollower::apply(const std::string& id, const Wanted& wanted) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
  }
  if (options_.kubeletCalls != nullptr)
    (void)options_.kubeletCalls->waitIdle(*options_.clock, options_.clock->now() + options_.yieldAtMost);
  const auto now = current(id, wanted.podUid);
  if (!now.ok()) {
    // vrid did not say where the container is now: its values are not sent, and asked for again.
    retryLater(id, wanted,
               "shared pool: container " + id.substr(0, 13) + " not updated: vrid: " + now.error().message());
    return;
  }
  if (!*now) return;  // released, or exclusive now: nothing to follow
  const v1::ContainerAllocation& allocation = **now;
  auto node = nodeCgroups_.get(vrid_, scope());
  if (!node.ok()) {
    retryLater(
        id, wanted,
        "shared pool: container " + id.substr(0, 13) + " not updated: vrid's node cgroups: " + node.error().message());
    return;
  }
  runtime::v1::UpdateContainerResourcesRequest update;
  update.set_container_id(id);
  cri::applyAllocation(allocation, *node, *update.mutable_linux());
  const std::string values = update.linux().SerializeAsString();
  bool known = false;
  {
    MutexLock lock(mutex_);
    const auto given = given_.find(id);
    if (given != given_.end() && given->second == values) return;  // the runtime has these already
    known = given != given_.end();
  }
  if (!known) {
    // Not given anything by this shim yet (it just started): the runtime may hold these values already.
    auto status = runtime_.containerStatus(scope(), id, false);
    if (!status.ok() && status.error().code() == ErrorCode::kNotFound) return;  // gone: nothing to keep in line
    if (status.ok() && runtimeHolds(status->status().resources().linux(), update.linux())) {
      MutexLock lock(mutex_);
      given_[id] = values;
      return;
    }
  }
  const Result<void> updated = runtime_.updateContainerResources(scope(), update);
  {
    MutexLock lock(mutex_);
    if (updated.ok()) {
      given_[id] = values;
      ++applied_;
      options_.log("shared pool: container " + id.substr(0, 13) + " now on CPUs " + allocation.cpuset_cpus() +
                   " in the runtime too");
      return;
    }
    if (updated.error().code() == ErrorCode::kNotFound) {
      given_.erase(id);  // the container is gone: done
      return;
    }
  }
  // Kept and tried again until it lands, unless a newer value comes first.
  retryLater(
      id, wanted,
      "UpdateContainerResources " + id + " (CPUs " + allocation.cpuset_cpus() + "): " + updated.error().message());
}

}  // namespace vri
