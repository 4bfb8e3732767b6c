#include "vri/libvirt_sync.h"

#include "accounting/tenant_id.h"
#include "libvirt-bridge/cputune_writer.h"
#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/qemu_pid.h"
#include "libvirt-bridge/vm_request.h"
#include "vri/domain_spec.h"

namespace vri {

namespace {

struct DomainSpec {
  DomainXml domain;
  VmSpec spec;
};

// A domain's definition read as the VM spec the ledger takes.
Result<DomainSpec> domainSpec(const std::string& xml) {
  VRI_ASSIGN_OR_RETURN(DomainXml domain, parseDomainXml(xml));
  auto request = domainRequest(domain);
  auto spec = request.ok() ? vmSpecFrom(*request) : Result<VmSpec>(request.error());
  if (!spec.ok()) return std::move(spec).context("domain " + domain.name).error();
  return DomainSpec{std::move(domain), std::move(*spec)};
}

}  // namespace

LibvirtSync::LibvirtSync(NodeManager& node, Logger& log, LibvirtSyncOptions options)
    : node_(node), log_(log), options_(std::move(options)) {
  events_ = node_.subscribe();
  LibvirtSessionOptions session;
  session.uri = options_.uri;
  session.clock = options_.clock;
  session.log = [this](const std::string& line) { log_.info(line); };
  session_ = LibvirtSession::start(std::move(session), *this);
  eventsThread_ = std::thread([this] { watchEvents(); });
}

LibvirtSync::~LibvirtSync() {
  stopping_ = true;
  if (eventsThread_.joinable()) eventsThread_.join();
  session_.reset();
}

void LibvirtSync::watchEvents() {
  Event event;
  auto retry_at = options_.clock->now() + options_.pinRetryInterval;
  auto count_at = options_.clock->now() + options_.vcpuPollInterval;
  while (!stopping_) {
    const auto next = events_->next(std::chrono::milliseconds(200), event);
    if (next == EventSubscription::Next::kClosed) return;
    if (options_.clock->now() >= count_at && !vcpuCheckQueued_.exchange(true)) {
      count_at = options_.clock->now() + options_.vcpuPollInterval;
      session_->post([this](LibvirtSession& session) { checkVcpus(session); });
    }
    if ((pendingCount_ > 0 || unadoptedCount_ > 0) && options_.clock->now() >= retry_at) {
      retry_at = options_.clock->now() + options_.pinRetryInterval;
      if (pendingCount_ > 0 && !retryQueued_.exchange(true))
        session_->post([this](LibvirtSession& session) { retryPending(session); });
      if (unadoptedCount_ > 0 && !adoptionQueued_.exchange(true))
        session_->post([this](LibvirtSession& session) { retryAdoption(session); });
    }
    // One follow-up queued at a time: a burst of pool changes needs one pass over the VMs.
    if (next == EventSubscription::Next::kEvent && event.kind == EventKind::kSharedPoolChanged &&
        !followQueued_.exchange(true)) {
      session_->post([this](LibvirtSession& session) { followSharedPool(session); });
    }
  }
}

void LibvirtSync::connected(LibvirtSession& session) {
  pinned_.clear();      // libvirtd may have restarted: tell it everything again
  ownDefines_.clear();  // and their events were lost with it
  auto xmls = session.activeDomainXmls();
  if (!xmls.ok()) {
    log_.warning("libvirt: " + xmls.error().message());
    return;
  }
  for (const std::string& xml : *xmls) adopt(session, xml);
  log_.info("libvirt: " + std::to_string(xmls->size()) + " running domains adopted");
  releaseUndefinedReservations(session);
  settleStoppedDomains(session);
}

void LibvirtSync::releaseUndefinedReservations(LibvirtSession& session) {
  const StatePtr state = node_.state();
  for (const auto& [uuid, vm] : state->vms) {
    if (!vm.defined) continue;
    const auto active = session.isActive(uuid);
    if (active.ok() || active.error().code() != ErrorCode::kNotFound) continue;
    if (const auto released = node_.releaseVm(uuid); released.ok()) {
      log_.info("libvirt: VM " + uuid + " is no longer defined; its reservation released");
    } else {
      log_.warning("libvirt: reservation of VM " + uuid + ", no longer defined: " + released.error().message());
    }
  }
}

bool LibvirtSync::adopt(LibvirtSession& session, const std::string& liveXml, bool quiet) {
  auto read = domainSpec(liveXml);
  if (!read.ok()) {
    log_.warning("libvirt: running domain not adopted: " + read.error().message());
    return true;  // nothing a retry would change
  }
  const DomainXml& domain = read->domain;
  const std::string who = "libvirt: domain " + domain.name;
  if (awaitsMove(domain.uuid)) {
    pinFromLedger(session, domain.uuid);  // the ledger holds a move this XML does not show yet
    return true;
  }
  // vrid could not record the decision (kUnavailable: its store failed): tried again until it can.
  // A refusal (no room for it) stands: the VM runs unplaced, as the log says.
  const auto couldNotRecord = [&](const Error& error) {
    if (error.code() != ErrorCode::kUnavailable) return false;
    unadopted_.insert(domain.uuid);
    unadoptedCount_ = unadopted_.size();
    return true;
  };
  auto admitted = node_.admitVm(read->spec);
  if (!admitted.ok() && admitted.error().code() == ErrorCode::kFailedPrecondition) {
    admitted = node_.resizeVm(read->spec);  // found by the start-up scan with a guessed request: correct it
  }
  if (!admitted.ok()) {
    if (!quiet) log_.warning(who + " runs unplaced: " + admitted.error().message());
    return !couldNotRecord(admitted.error());
  }
  const auto pid = readQemuPid(options_.qemuPidDir, domain.name);
  if (!pid.ok()) {
    log_.warning(who + ": " + pid.error().message() + "; its cgroups are placed at the next reconcile");
  } else if (auto started = node_.vmStarted(domain.uuid, *pid); !started.ok()) {
    if (!quiet) log_.warning(who + ": " + started.error().message());
    return !couldNotRecord(started.error());
  }
  if (unadopted_.erase(domain.uuid) > 0) {
    unadoptedCount_ = unadopted_.size();
    log_.info(who + " adopted: vrid could record it again");
  }
  pinFromLedger(session, domain.uuid);
  return true;
}

void LibvirtSync::pinFromLedger(LibvirtSession& session, const std::string& uuid) {
  const StatePtr state = node_.state();
  if (const VmRecord* vm = state->vm(uuid)) (void)pin(session, *vm, node_.wideSharedCpus(*state), true);
}

Result<void> LibvirtSync::setLive(LibvirtSession& session, const VmRecord& vm, const CpuSet& shared, bool force) {
  const std::string& uuid = vm.spec.uuid;
  VRI_ASSIGN_OR_RETURN(VmPins pins, vmPinsOf(vm.spec.cpu, vm.placement, shared));
  const bool users = !vm.spec.cpu.pinnedVcpuCpus.empty();
  Told told{pins, users ? "" : vriMetadataElement(vriMetadataOf(vm.spec.cpu, pins))};
  const auto known = pinned_.find(uuid);
  if (!force && known != pinned_.end() && known->second.pins == told.pins && known->second.metadata == told.metadata) {
    return {};
  }
  // The record names shared threads as such, so a shared-pool change alone leaves it as it is: it is
  // rewritten only when it changes: writing it costs libvirtd about what the pin does (bench/libvirt_live_calls).
  const bool record = !users && (force || known == pinned_.end() || known->second.metadata != told.metadata);
  pinned_.erase(uuid);  // whatever fails below, libvirt is told everything next time
  VRI_TRY(session.pinLive(uuid, pins));
  if (record) VRI_TRY(session.setVriMetadata(uuid, told.metadata, false));
  pinned_[uuid] = std::move(told);
  log_.debug("libvirt: live pins of VM " + uuid + " set");
  return {};
}

Result<void> LibvirtSync::pin(LibvirtSession& session, const VmRecord& vm, const CpuSet& shared, bool force) {
  if (vm.defined) return {};
  const std::string& uuid = vm.spec.uuid;
  const std::string tenant = vmTenant(uuid);
  auto done = setLive(session, vm, shared, force);
  if (!done.ok()) {
    const std::string why = done.error().message();
    log_.warning("libvirt: " + why + "; retrying");
    const auto [was, first] = pendingPins_.try_emplace(uuid, why);
    if (first) node_.announce(EventKind::kPinsPending, tenant, why);
    pendingCount_ = pendingPins_.size();
    return done;
  }
  {
    MutexLock lock(movedMutex_);
    moved_.erase(uuid);
  }
  if (pendingPins_.erase(uuid) > 0) {
    pendingCount_ = pendingPins_.size();
    log_.info("libvirt: live pins of VM " + uuid + " set after all");
    node_.announce(EventKind::kPinsSet, tenant, "libvirt holds the ledger's pins");
  }
  return {};
}

void LibvirtSync::forget(const std::string& uuid) {
  pinned_.erase(uuid);
  pendingPins_.erase(uuid);
  pendingCount_ = pendingPins_.size();
  MutexLock lock(movedMutex_);
  moved_.erase(uuid);
}

void LibvirtSync::retryPending(LibvirtSession& session) {
  retryQueued_ = false;
  const StatePtr state = node_.state();
  std::vector<std::string> pending;
  for (const auto& [uuid, why] : pendingPins_) pending.push_back(uuid);
  for (const std::string& uuid : pending) {
    const VmRecord* vm = state->vm(uuid);
    if (vm == nullptr || state->vmScope(uuid) == nullptr) {
      forget(uuid);  // released, or not running any more: nothing left to pin
      continue;
    }
    (void)pin(session, *vm, node_.wideSharedCpus(*state), true);
  }
  pendingCount_ = pendingPins_.size();
}

namespace {

// Answers exactly once: with the outcome, or "pending" when the task that
// would have answered is dropped (libvirt not connected, vrid stopping).
class AnswerOnce {
 public:
  explicit AnswerOnce(LivePinsDone done) : done_(std::move(done)) {}
  ~AnswerOnce() {
    if (done_) {
      done_({LivePinsOutcome::State::kPending, "libvirt is not connected; the pins are set when it is"});
    }
  }
  AnswerOnce(const AnswerOnce&) = delete;
  AnswerOnce& operator=(const AnswerOnce&) = delete;
  void answer(LivePinsOutcome outcome) {
    LivePinsDone done = std::move(done_);
    done_ = nullptr;
    if (done) done(std::move(outcome));
  }

 private:
  LivePinsDone done_;
};

}  // namespace

void LibvirtSync::setPins(const std::string& uuid, bool persistent, LivePinsDone done) {
  {
    MutexLock lock(movedMutex_);
    moved_.insert(uuid);
  }
  auto once = std::make_shared<AnswerOnce>(std::move(done));
  session_->post(
      [this, uuid, persistent, once](LibvirtSession& session) { once->answer(applyMove(session, uuid, persistent)); });
}

LivePinsOutcome LibvirtSync::applyMove(LibvirtSession& session, const std::string& uuid, bool persistent) {
  const StatePtr state = node_.state();
  const VmRecord* vm = state->vm(uuid);
  if (vm == nullptr) return {LivePinsOutcome::State::kApplied, "the VM was released meanwhile"};
  if (auto live = pin(session, *vm, node_.wideSharedCpus(*state), true); !live.ok()) {
    return {LivePinsOutcome::State::kPending, live.error().message()};
  }
  if (!persistent) return {};
  // The definition takes what the running domain was just told: the same pins and record.
  const auto told = pinned_.find(uuid);
  if (told == pinned_.end()) return {LivePinsOutcome::State::kDefinitionFailed, "no live pins to save"};
  const Result<void> saved = saveInDefinition(session, *vm, told->second.pins);
  if (!saved.ok()) return {LivePinsOutcome::State::kDefinitionFailed, saved.error().message()};
  return {};
}

Result<void> LibvirtSync::saveInDefinition(LibvirtSession& session, const VmRecord& vm, const VmPins& pins) {
  const std::string& uuid = vm.spec.uuid;
  VRI_TRY(session.pinPersistent(uuid, pins));
  if (!vm.spec.cpu.pinnedVcpuCpus.empty()) return {};  // the user's own pins: no record of VRI's
  // The record replaces the one writeVriPins left: without the domain's own <numatune> in it, the
  // stop would keep VRI's <numatune> in the definition as if it were the domain's.
  VRI_ASSIGN_OR_RETURN(const std::string definition, session.domainXml(uuid, true));
  VriDomainMetadata metadata = vriMetadataOf(vm.spec.cpu, pins);
  VRI_ASSIGN_OR_RETURN(metadata.ownNumatuneRecord, ownNumatuneRecordOf(definition));
  return session.setVriMetadata(uuid, vriMetadataElement(metadata), true);
}

void LibvirtSync::followSharedPool(LibvirtSession& session) {
  followQueued_ = false;                 // a change from now on queues another pass
  const StatePtr state = node_.state();  // O(1): no copy of the ledger
  const CpuSet shared = node_.wideSharedCpus(*state);
  for (const auto& [uuid, scope] : state->vmScopes) {
    if (const VmRecord* vm = state->vm(uuid)) (void)pin(session, *vm, shared, false);
  }
}

bool LibvirtSync::onlyReserved(const std::string& uuid) const {
  const StatePtr state = node_.state();  // holds the record while it is read
  const VmRecord* vm = state->vm(uuid);
  return vm != nullptr && vm->defined;
}

void LibvirtSync::placeDefinition(LibvirtSession& session, const std::string& uuid) {
  auto active = session.isActive(uuid);
  if (!active.ok()) {
    // Undefined again already, or libvirtd away: the definition is placed when the domain starts.
    log_.info("libvirt: no define-time placement for domain " + uuid + ": " + active.error().message());
    return;
  }
  if (*active) return;  // a running domain's definition waits for its next start
  auto xml = session.domainXml(uuid, true);
  if (!xml.ok()) {
    log_.info("libvirt: no define-time placement for domain " + uuid + ": its definition: " + xml.error().message());
    return;
  }
  auto read = domainSpec(*xml);
  if (!read.ok()) {
    log_.warning("libvirt: definition not placed: " + read.error().message());
    return;
  }
  const DomainXml& domain = read->domain;
  VmSpec spec = read->spec;
  spec.alignCells = !domain.hasUserPins();  // the placement is written back into the definition
  auto reserved = node_.reserveVm(spec);
  if (!reserved.ok() && reserved.error().code() == ErrorCode::kFailedPrecondition) {
    // The definition was edited while only reserved: place it anew.
    if (onlyReserved(uuid) && node_.releaseVm(uuid).ok()) reserved = node_.reserveVm(spec);
  }
  if (!reserved.ok()) {
    log_.info("libvirt: no define-time placement for " + domain.name + ": " + reserved.error().message());
    return;
  }
  if (domain.hasUserPins()) return;  // the user's own pins already say where it runs
  const StatePtr state = node_.state();
  const VmRecord* vm = state->vm(uuid);
  if (!vm) return;
  auto pins = vmPinsOf(vm->spec.cpu, vm->placement, node_.wideSharedCpus(*state));
  if (!pins.ok()) {
    // Reserved in the ledger; the definition keeps no pins of VRI's until the domain starts.
    log_.warning("libvirt: define-time placement of " + domain.name + " not written: " + pins.error().message());
    return;
  }
  if (domain.pinsAreVris() && *domain.vri.placement == placementMark(*pins)) {
    return;  // already written (this is the event of our own define)
  }
  auto rewritten = writeVriPins(*xml, *pins);
  if (!rewritten.ok()) {
    log_.warning("libvirt: " + rewritten.error().message());
    return;
  }
  if (auto defined = session.define(*rewritten); !defined.ok()) {
    log_.warning("libvirt: define-time placement of " + domain.name + ": " + defined.error().message());
    return;
  }
  log_.info("libvirt: define-time placement written into " + domain.name);
}

void LibvirtSync::domainEvent(LibvirtSession& session, const DomainEvent& event) {
  switch (event.kind) {
    case DomainEventKind::kStarted: {
      const StatePtr state = node_.state();
      const VmRecord* vm = state->vm(event.uuid);
      if (vm == nullptr || vm->defined) {
        adoptStarted(session, event.uuid);
      } else {
        pinFromLedger(session, event.uuid);
      }
      break;
    }
    case DomainEventKind::kStopped:
      forget(event.uuid);
      unadopted_.erase(event.uuid);
      unadoptedCount_ = unadopted_.size();
      unpinStopped(session, event.uuid);
      break;
    case DomainEventKind::kPinsChanged: checkPins(session, event.uuid); break;
    case DomainEventKind::kDefined:
      if (ownDefines_.erase(event.uuid) > 0) break;  // VRI's pins taken out: placed when it starts
      if (options_.defineTimePlacement) placeDefinition(session, event.uuid);
      break;
    case DomainEventKind::kUndefined:
      if (onlyReserved(event.uuid)) (void)node_.releaseVm(event.uuid);
      break;
  }
}

}  // namespace vri
