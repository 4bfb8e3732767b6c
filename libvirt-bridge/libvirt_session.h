// LibvirtSession: vrid's connection to libvirtd, outside the hook.
//
// Two threads: libvirt's event loop, and a worker that owns the connection
// (connects, reconnects with back-off after libvirtd goes away) and runs every
// handler call and posted task in order. Handlers therefore never run inside
// libvirt's event callbacks and may call libvirt freely.
#pragma once

#include <libvirt/libvirt.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/thread_annotations.h"
#include "libvirt-bridge/vm_pins.h"

namespace vri {

// kPinsChanged: a running domain's vCPU, emulator or iothread pins changed
// (libvirt's tunable event), by VRI or by anyone else.
enum class DomainEventKind { kDefined, kUndefined, kStarted, kStopped, kPinsChanged };

struct DomainEvent {
  DomainEventKind kind;
  std::string uuid;
  std::string name;
};

class LibvirtSession;

class LibvirtHandler {
 public:
  virtual ~LibvirtHandler() = default;
  // After every (re)connect: the place to adopt what runs.
  virtual void connected(LibvirtSession& session) = 0;
  virtual void domainEvent(LibvirtSession& session, const DomainEvent& event) = 0;
};

struct LibvirtSessionOptions {
  std::string uri = "qemu:///system";
  std::chrono::milliseconds firstRetry{250};
  std::chrono::milliseconds maxRetry{8000};
  const Clock* clock = &steadyClock();          // what the back-off waits by; not owned
  std::function<void(const std::string&)> log;  // one line per connection change; may be empty
};

class LibvirtSession {
 public:
  // Starts the threads; the first connection is attempted at once, failures are retried.
  static std::unique_ptr<LibvirtSession> start(LibvirtSessionOptions options, LibvirtHandler& handler);
  ~LibvirtSession();
  LibvirtSession(const LibvirtSession&) = delete;
  LibvirtSession& operator=(const LibvirtSession&) = delete;

  // Runs `task` on the worker thread, after what is queued.
  void post(std::function<void(LibvirtSession&)> task);
  bool isConnected() const { return connected_.load(); }
  int connections() const { return connections_.load(); }  // successful connects so far
  int attempts() const { return attempts_.load(); }        // connects tried so far, failures included

  // For handlers and posted tasks (worker thread).
  Result<std::vector<std::string>> activeDomainXmls();
  // The definitions of the persistent domains that are not running.
  Result<std::vector<std::string>> stoppedDomainXmls();
  Result<std::string> domainXml(const std::string& uuid, bool inactive);
  Result<bool> isActive(const std::string& uuid);  // kNotFound: libvirt defines no such domain
  // How many vCPUs the running domain has online.
  Result<int> liveVcpuCount(const std::string& uuid);
  // Pins the running domain's vCPUs, emulator and iothreads (libvirt writes its
  // cgroups and records them in its live XML, so `virsh vcpupin` agrees).
  Result<void> pinLive(const std::string& uuid, const VmPins& pins);
  Result<void> define(const std::string& xml);
  // Replaces VRI's element in the domain's <metadata> (`element` as
  // vriMetadataElement makes it) in the running domain or, with `persistent`,
  // in its definition.
  Result<void> setVriMetadata(const std::string& uuid, const std::string& element, bool persistent);
  // Pins the persistent definition's vCPUs and emulator as `pins` says (the next start's <cputune>).
  Result<void> pinPersistent(const std::string& uuid, const VmPins& pins);

 private:
  LibvirtSession(LibvirtSessionOptions options, LibvirtHandler& handler)
      : options_(std::move(options)), handler_(handler) {}
  void eventLoop();
  void worker();
  // Each listed domain's XML (virConnectListAllDomains' `listFlags`, virDomainGetXMLDesc's `xmlFlags`).
  Result<std::vector<std::string>> domainXmls(unsigned listFlags, unsigned xmlFlags, std::string_view what);
  // Pins `pins`' threads with `flags` (live or the definition); `where` names the definition in errors.
  Result<void> pin(const std::string& uuid, const VmPins& pins, unsigned flags, std::string_view where);
  bool connect();
  void disconnect();
  void say(const std::string& line) const {
    if (options_.log) options_.log(line);
  }
  Result<std::unique_ptr<virDomain, int (*)(virDomainPtr)>> lookup(const std::string& uuid);
  static void onLifecycle(virConnectPtr, virDomainPtr, int event, int detail, void* opaque);
  static void onTunable(virConnectPtr, virDomainPtr, virTypedParameterPtr params, int count, void* opaque);
  // On libvirt's event thread: hands the event to the worker.
  void forward(virDomainPtr domain, DomainEvent event);
  static void onClose(virConnectPtr, int reason, void* opaque);

  LibvirtSessionOptions options_;
  LibvirtHandler& handler_;
  virConnectPtr conn_ = nullptr;  // worker thread only
  int lifecycleCallback_ = -1;
  int tunableCallback_ = -1;
  int wakeTimer_ = -1;
  std::atomic<bool> connected_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> attempts_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> lost_{false};  // set by the close callback

  Mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<std::function<void(LibvirtSession&)>> tasks_ VRI_GUARDED_BY(mutex_);
  std::thread eventThread_, workerThread_;
};

}  // namespace vri
