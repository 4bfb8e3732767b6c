#include "kubelet-bridge/shared_pool_follower.h"

#include "kubelet-bridge/cri.pb.h"
#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/upstream_call.h"

namespace vri {

namespace {

constexpr char kRuntime[] = "/runtime.v1.RuntimeService/";

std::string method(const char* name) { return std::string(kRuntime) + name; }

// Whether containerd already holds these values (it reports what it was last given).
bool holds(const runtime::v1::LinuxContainerResources& now, const runtime::v1::LinuxContainerResources& wanted) {
  return now.cpuset_cpus() == wanted.cpuset_cpus() && now.cpuset_mems() == wanted.cpuset_mems() &&
         now.cpu_shares() == wanted.cpu_shares() && now.cpu_period() == wanted.cpu_period() &&
         (now.cpu_quota() == wanted.cpu_quota() || (now.cpu_quota() <= 0 && wanted.cpu_quota() <= 0));
}

}  // namespace

SharedPoolFollower::SharedPoolFollower(std::shared_ptr<grpc::Channel> vrid, std::shared_ptr<grpc::Channel> containerd,
                                       SharedPoolFollowerOptions options)
    : vrid_(v1::Vri::NewStub(std::move(vrid))),
      containerd_(std::move(containerd)),
      options_(std::move(options)),
      pool_(options_.workers) {}

SharedPoolFollower::~SharedPoolFollower() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    if (watch_ != nullptr) watch_->TryCancel();
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

void SharedPoolFollower::start() {
  watcher_ = std::thread([this] { watchLoop(); });
}

std::unique_ptr<grpc::ClientContext> SharedPoolFollower::context() const {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + options_.callTimeout);
  return c;
}

void SharedPoolFollower::watchLoop() {
  bool said_away = false;
  for (;;) {
    grpc::ClientContext stream;
    {
      MutexLock lock(mutex_);
      if (stopping_) return;
      watch_ = &stream;
      // A new stream may be a new vrid, whose decisions count from zero again: its lists start the order anew.
      listed_ = 0;
      wanted_.clear();
    }
    std::unique_ptr<grpc::ClientReader<v1::Event>> events = vrid_->Watch(&stream, v1::WatchRequest());
    // Events from here on are seen; the pass covers everything before.
    if (pass(true) && said_away) options_.log("following vrid's events again");
    v1::Event event;
    bool connected = false;
    while (events->Read(&event)) {
      if (!connected) connected = true;
      if (event.kind() == v1::Event::SHARED_POOL_CHANGED) pass(false);
      if (event.kind() == v1::Event::EVENTS_LOST) pass(true);  // some changes were missed
    }
    const grpc::Status ended = events->Finish();
    MutexLock lock(mutex_);
    watch_ = nullptr;
    if (stopping_) return;
    if (!said_away) options_.log("vrid's events: " + ended.error_message() + "; following again when it is back");
    said_away = !connected;
    lock.waitFor(wake_, options_.reconnect);
  }
}

bool SharedPoolFollower::pass(bool checkLedger) {
  v1::ListTenantsRequest request;
  request.set_kind(v1::ListTenantsRequest::PODS);
  v1::TenantList tenants;
  if (!vrid_->ListTenants(context().get(), request, &tenants).ok()) return false;  // vrid away: the next stream retries
  {
    MutexLock lock(mutex_);
    if (tenants.sequence() < listed_) return true;  // an older list than one already taken
    listed_ = tenants.sequence();
  }
  if (checkLedger)
    syncLedger(LedgerSyncCalls{*vrid_, containerd_, [this] { return context(); }, options_.log}, tenants);
  for (const v1::Tenant& tenant : tenants.tenants()) {
    if (tenant.pod().sandbox_id().empty()) continue;  // not run through a CRI shim: not containerd's to update
    for (const v1::ContainerInfo& c : tenant.pod().containers()) {
      if (c.resources().id().empty() || c.allocation().exclusive()) continue;  // only shared containers follow the pool
      want(c.resources().id(), Wanted{tenant.pod().uid(), tenants.sequence()});
    }
  }
  ++passes_;
  return true;
}

void SharedPoolFollower::want(const std::string& id, Wanted wanted) {
  MutexLock lock(mutex_);
  auto [entry, inserted] = wanted_.try_emplace(id, wanted);
  if (!inserted && entry->second.sequence <= wanted.sequence) entry->second = std::move(wanted);
  dispatch();
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
      dispatch();
    });
    it = wanted_.erase(it);
  }
}

std::optional<v1::ContainerAllocation> SharedPoolFollower::current(const std::string& id, const std::string& podUid) {
  v1::GetTenantRequest request;
  request.set_pod_uid(podUid);
  v1::Tenant tenant;
  if (!vrid_->GetTenant(context().get(), request, &tenant).ok()) return std::nullopt;
  for (const v1::ContainerInfo& c : tenant.pod().containers()) {
    if (c.resources().id() == id && !c.allocation().exclusive()) return c.allocation();
  }
  return std::nullopt;
}

void SharedPoolFollower::apply(const std::string& id, const Wanted& wanted) {
  {
    const auto until = std::chrono::steady_clock::now() + options_.yieldAtMost;
    MutexLock lock(mutex_);
    while (!stopping_ && options_.callsInFlight() > 0 && std::chrono::steady_clock::now() < until)
      lock.waitFor(wake_, std::chrono::milliseconds(2));
  }
  const std::optional<v1::ContainerAllocation> allocation = current(id, wanted.podUid);
  std::string mems;
  if (!allocation || !memoryNodes_.get(*vrid_, *context(), &mems).ok())
    return;  // released, exclusive now, or vrid away: a later pass covers it
  runtime::v1::UpdateContainerResourcesRequest update;
  update.set_container_id(id);
  cri::applyAllocation(*allocation, cri::NodeCgroups{options_.cgroupV2, mems}, *update.mutable_linux());
  const std::string values = update.linux().SerializeAsString();
  bool known = false;
  {
    MutexLock lock(mutex_);
    const auto given = given_.find(id);
    if (given != given_.end() && given->second == values) return;  // containerd has these already
    known = given != given_.end();
  }
  if (!known) {
    // Not given anything by this shim yet (it just started): containerd may hold these values already.
    runtime::v1::ContainerStatusRequest ask;
    ask.set_container_id(id);
    runtime::v1::ContainerStatusResponse status;
    const grpc::Status asked = callUpstream(containerd_, *context(), method("ContainerStatus"), ask, &status);
    if (asked.error_code() == grpc::StatusCode::NOT_FOUND) return;  // gone: nothing to keep in line
    if (asked.ok() && holds(status.status().resources().linux(), update.linux())) {
      MutexLock lock(mutex_);
      given_[id] = values;
      return;
    }
  }
  runtime::v1::UpdateContainerResourcesResponse done;
  const grpc::Status updated = callUpstream(containerd_, *context(), method("UpdateContainerResources"), update, &done);
  MutexLock lock(mutex_);
  if (updated.ok()) {
    given_[id] = values;
    ++applied_;
    options_.log("shared pool: container " + id.substr(0, 13) + " now on CPUs " + allocation->cpuset_cpus() +
                 " in containerd too");
  } else if (updated.error_code() == grpc::StatusCode::NOT_FOUND) {
    given_.erase(id);  // the container is gone: done
  } else {
    // Kept and tried again until it lands, unless a newer value comes first.
    options_.log("UpdateContainerResources " + id + " (CPUs " + allocation->cpuset_cpus() +
                 "): " + updated.error_message() + "; trying again");
    lock.waitFor(wake_, options_.reconnect);
    if (!stopping_ && !wanted_.count(id)) wanted_.emplace(id, wanted);  // dispatched once this one leaves
  }
}

}  // namespace vri
