#include "libvirt-bridge/libvirt_session.h"
#include "libvirt-bridge/domain_xml.h"

#include <libvirt/virterror.h>

#include <algorithm>
#include <string_view>

namespace vri {

namespace {

// libvirt prints every error to stderr unless told otherwise; VRI reports them itself.
void ignoreLibvirtError(void*, virErrorPtr) {}

// The event loop implementation is process-wide in libvirt; registered once.
void registerEventImplOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    virSetErrorFunc(nullptr, ignoreLibvirtError);
    virEventRegisterDefaultImpl();
  });
}

Error libvirtError(const std::string& what) {
  const char* message = virGetLastErrorMessage();
  return Error(ErrorCode::kUnavailable, what + ": " + (message != nullptr ? message : "unknown libvirt error"));
}

std::vector<unsigned char> cpumap(const CpuSet& cpus, int& length) {
  const int max = cpus.empty() ? 0 : cpus.last();
  length = max / 8 + 1;
  std::vector<unsigned char> map(static_cast<size_t>(length), 0);
  for (int cpu : cpus) map[static_cast<size_t>(cpu / 8)] |= static_cast<unsigned char>(1u << (cpu % 8));
  return map;
}

}  // namespace

std::unique_ptr<LibvirtSession> LibvirtSession::start(LibvirtSessionOptions options, LibvirtHandler& handler) {
  registerEventImplOnce();
  std::unique_ptr<LibvirtSession> session(new LibvirtSession(std::move(options), handler));
  // A periodic timer keeps virEventRunDefaultImpl returning, so that the loop can see `stopping_`.
  session->wakeTimer_ = virEventAddTimeout(
      100, [](int, void*) {}, nullptr, nullptr);
  session->eventThread_ = std::thread([s = session.get()] { s->eventLoop(); });
  session->workerThread_ = std::thread([s = session.get()] { s->worker(); });
  return session;
}

LibvirtSession::~LibvirtSession() {
  stopping_ = true;
  wake_.notify_all();
  if (workerThread_.joinable()) workerThread_.join();  // disconnects
  if (eventThread_.joinable()) eventThread_.join();
  if (wakeTimer_ >= 0) virEventRemoveTimeout(wakeTimer_);
}

void LibvirtSession::post(std::function<void(LibvirtSession&)> task) {
  {
    MutexLock lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_all();
}

void LibvirtSession::eventLoop() {
  while (!stopping_) {
    if (virEventRunDefaultImpl() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void LibvirtSession::worker() {
  const Clock& clock = *options_.clock;
  auto retry = options_.firstRetry;
  auto next_attempt = clock.now();
  bool reported_down = false;
  while (!stopping_) {
    if (lost_.exchange(false) && conn_ != nullptr) {
      say("libvirt: lost the connection to " + options_.uri + "; reconnecting");
      disconnect();
      next_attempt = clock.now();
    }
    if (conn_ == nullptr && clock.now() >= next_attempt) {
      if (connect()) {
        retry = options_.firstRetry;
        reported_down = false;
        say("libvirt: connected to " + options_.uri);
        handler_.connected(*this);
      } else {
        // virGetLastErrorMessage() says "no error" rather than returning null.
        if (!reported_down) {
          say("libvirt: cannot connect to " + options_.uri + " (" + virGetLastErrorMessage() +
              "); retrying with back-off");
        }
        reported_down = true;
        next_attempt = clock.now() + retry;
        retry = std::min(retry * 2, options_.maxRetry);
      }
    }
    std::function<void(LibvirtSession&)> task;
    {
      MutexLock lock(mutex_);
      // A lost connection is flagged without this mutex: look again within 100 ms even if its wake-up was missed.
      if (!stopping_ && tasks_.empty()) {
        Clock::TimePoint until = clock.now() + std::chrono::milliseconds(100);
        if (conn_ == nullptr) until = std::min(until, next_attempt);
        (void)clock.waitUntil(lock, wake_, until);
      }
      if (stopping_) break;
      if (tasks_.empty()) continue;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    if (conn_ != nullptr) task(*this);  // without a connection, reconnecting adopts everything anyway
  }
  disconnect();
}

bool LibvirtSession::connect() {
  ++attempts_;
  conn_ = virConnectOpen(options_.uri.c_str());
  if (conn_ == nullptr) return false;
  // Keepalive notices a libvirtd that died without closing the socket.
  (void)virConnectSetKeepAlive(conn_, 5, 3);
  if (virConnectRegisterCloseCallback(conn_, onClose, this, nullptr) < 0 ||
      (lifecycleCallback_ = virConnectDomainEventRegisterAny(
           conn_, nullptr, VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(onLifecycle), this, nullptr)) < 0 ||
      (tunableCallback_ = virConnectDomainEventRegisterAny(conn_, nullptr, VIR_DOMAIN_EVENT_ID_TUNABLE,
                                                           VIR_DOMAIN_EVENT_CALLBACK(onTunable), this, nullptr)) < 0) {
    disconnect();
    return false;
  }
  connected_ = true;
  ++connections_;
  return true;
}

void LibvirtSession::disconnect() {
  if (conn_ == nullptr) return;
  if (lifecycleCallback_ >= 0) (void)virConnectDomainEventDeregisterAny(conn_, lifecycleCallback_);
  if (tunableCallback_ >= 0) (void)virConnectDomainEventDeregisterAny(conn_, tunableCallback_);
  lifecycleCallback_ = tunableCallback_ = -1;
  (void)virConnectUnregisterCloseCallback(conn_, onClose);
  virConnectClose(conn_);
  conn_ = nullptr;
  connected_ = false;
}

void LibvirtSession::onClose(virConnectPtr, int, void* opaque) {
  auto* self = static_cast<LibvirtSession*>(opaque);
  self->lost_ = true;
  self->wake_.notify_all();
}

void LibvirtSession::onLifecycle(virConnectPtr, virDomainPtr domain, int event, int, void* opaque) {
  auto* self = static_cast<LibvirtSession*>(opaque);
  DomainEvent e{};
  switch (event) {
    case VIR_DOMAIN_EVENT_DEFINED: e.kind = DomainEventKind::kDefined; break;
    case VIR_DOMAIN_EVENT_UNDEFINED: e.kind = DomainEventKind::kUndefined; break;
    case VIR_DOMAIN_EVENT_STARTED: e.kind = DomainEventKind::kStarted; break;
    case VIR_DOMAIN_EVENT_STOPPED: e.kind = DomainEventKind::kStopped; break;
    default: return;
  }
  self->forward(domain, e);
}

void LibvirtSession::onTunable(virConnectPtr, virDomainPtr domain, virTypedParameterPtr params, int count,
                               void* opaque) {
  // Only pins: libvirt reports shares, quota and the like the same way.
  bool pins = false;
  for (int i = 0; i < count; ++i) {
    const std::string_view field = params[i].field;
    pins |= field.starts_with("cputune.vcpupin") || field.starts_with("cputune.emulatorpin") ||
            field.starts_with("cputune.iothreadpin");
  }
  if (pins) static_cast<LibvirtSession*>(opaque)->forward(domain, DomainEvent{DomainEventKind::kPinsChanged, "", ""});
}

void LibvirtSession::forward(virDomainPtr domain, DomainEvent e) {
  char uuid[VIR_UUID_STRING_BUFLEN] = {};
  if (virDomainGetUUIDString(domain, uuid) < 0) return;
  e.uuid = uuid;
  const char* name = virDomainGetName(domain);
  e.name = name != nullptr ? name : "";
  post([e](LibvirtSession& session) { session.handler_.domainEvent(session, e); });
}

Result<std::unique_ptr<virDomain, int (*)(virDomainPtr)>> LibvirtSession::lookup(const std::string& uuid) {
  if (conn_ == nullptr) return Error(ErrorCode::kUnavailable, "not connected to " + options_.uri);
  virDomainPtr domain = virDomainLookupByUUIDString(conn_, uuid.c_str());
  if (domain == nullptr && virGetLastErrorCode() == VIR_ERR_NO_DOMAIN)
    return Error::notFound("libvirt defines no domain " + uuid);
  if (domain == nullptr) return libvirtError("look up domain " + uuid);
  return std::unique_ptr<virDomain, int (*)(virDomainPtr)>(domain, virDomainFree);
}

Result<std::vector<std::string>> LibvirtSession::activeDomainXmls() {
  return domainXmls(VIR_CONNECT_LIST_DOMAINS_ACTIVE, 0, "list the running domains");
}

Result<std::vector<std::string>> LibvirtSession::stoppedDomainXmls() {
  return domainXmls(VIR_CONNECT_LIST_DOMAINS_INACTIVE | VIR_CONNECT_LIST_DOMAINS_PERSISTENT, VIR_DOMAIN_XML_INACTIVE,
                    "list the defined domains that are not running");
}

Result<std::vector<std::string>> LibvirtSession::domainXmls(unsigned listFlags, unsigned xmlFlags,
                                                            std::string_view what) {
  if (conn_ == nullptr) return Error(ErrorCode::kUnavailable, "not connected to " + options_.uri);
  virDomainPtr* domains = nullptr;
  const int count = virConnectListAllDomains(conn_, &domains, listFlags);
  if (count < 0) return libvirtError(std::string(what));
  std::vector<std::string> xmls;
  for (int i = 0; i < count; ++i) {
    if (char* xml = virDomainGetXMLDesc(domains[i], xmlFlags)) {  // null: the domain went meanwhile
      xmls.emplace_back(xml);
      free(xml);
    }
    virDomainFree(domains[i]);
  }
  free(domains);
  return xmls;
}

Result<std::string> LibvirtSession::domainXml(const std::string& uuid, bool inactive) {
  VRI_ASSIGN_OR_RETURN(auto domain, lookup(uuid));
  char* xml = virDomainGetXMLDesc(domain.get(), inactive ? VIR_DOMAIN_XML_INACTIVE : 0);
  if (xml == nullptr) return libvirtError("read the XML of domain " + uuid);
  std::string out(xml);
  free(xml);
  return out;
}

Result<bool> LibvirtSession::isActive(const std::string& uuid) {
  VRI_ASSIGN_OR_RETURN(auto domain, lookup(uuid));
  const int active = virDomainIsActive(domain.get());
  if (active < 0) return libvirtError("state of domain " + uuid);
  return active == 1;
}

Result<void> LibvirtSession::pinLive(const std::string& uuid, const VmPins& pins) {
  // VIR_DOMAIN_AFFECT_CURRENT on a running domain is the live state.
  // Offline vCPUs are pinned too: libvirt keeps the pin for when one is brought online.
  return pin(uuid, pins, VIR_DOMAIN_AFFECT_CURRENT, "");
}

Result<void> LibvirtSession::pinPersistent(const std::string& uuid, const VmPins& pins) {
  // Without the iothreads: a move changes vCPUs and the emulator only, and a live-added iothread
  // has no pin to take in the definition.
  VmPins threads = pins;
  threads.iothreads.clear();
  return pin(uuid, threads, VIR_DOMAIN_AFFECT_CONFIG, " in the definition");
}

Result<void> LibvirtSession::pin(const std::string& uuid, const VmPins& pins, unsigned flags, std::string_view where) {
  VRI_ASSIGN_OR_RETURN(auto domain, lookup(uuid));
  const std::string of = std::string(where) + " of " + uuid;
  for (const auto& [vcpu, cpus] : pins.vcpus) {
    int length = 0;
    auto map = cpumap(cpus, length);
    if (virDomainPinVcpuFlags(domain.get(), static_cast<unsigned>(vcpu), map.data(), length, flags) < 0) {
      return libvirtError("pin vCPU " + std::to_string(vcpu) + of);
    }
  }
  if (!pins.emulator.empty()) {
    int length = 0;
    auto map = cpumap(pins.emulator, length);
    if (virDomainPinEmulator(domain.get(), map.data(), length, flags) < 0) return libvirtError("pin the emulator" + of);
  }
  for (const auto& [id, cpus] : pins.iothreads) {
    int length = 0;
    auto map = cpumap(cpus, length);
    if (virDomainPinIOThread(domain.get(), static_cast<unsigned>(id), map.data(), length, flags) < 0) {
      return libvirtError("pin iothread " + std::to_string(id) + of);
    }
  }
  return {};
}

Result<void> LibvirtSession::define(const std::string& xml) {
  if (conn_ == nullptr) return Error(ErrorCode::kUnavailable, "not connected to " + options_.uri);
  virDomainPtr domain = virDomainDefineXML(conn_, xml.c_str());
  if (domain == nullptr) return libvirtError("define domain");
  virDomainFree(domain);
  return {};
}

Result<void> LibvirtSession::setVriMetadata(const std::string& uuid, const std::string& element, bool persistent) {
  VRI_ASSIGN_OR_RETURN(auto domain, lookup(uuid));
  const std::string ns(kVriXmlNamespace), prefix(kVriXmlPrefix);
  const unsigned flags = persistent ? VIR_DOMAIN_AFFECT_CONFIG : VIR_DOMAIN_AFFECT_LIVE;
  if (virDomainSetMetadata(domain.get(), VIR_DOMAIN_METADATA_ELEMENT, element.c_str(), prefix.c_str(), ns.c_str(),
                           flags) < 0) {
    return libvirtError("record VRI's pins in the metadata of " + uuid);
  }
  return {};
}

Result<int> LibvirtSession::liveVcpuCount(const std::string& uuid) {
  VRI_ASSIGN_OR_RETURN(auto domain, lookup(uuid));
  const int count = virDomainGetVcpusFlags(domain.get(), VIR_DOMAIN_AFFECT_LIVE);
  if (count < 0) return libvirtError("count the vCPUs of " + uuid);
  return count;
}

}  // namespace vri
