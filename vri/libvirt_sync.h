// LibvirtSync: keeps libvirt's view of the VMs in step with the ledger.
//
//  - after every (re)connect, adopts every running domain: its definition is
//    admitted (idempotent; an adopted VM's request is corrected in place), its
//    cgroups found through QEMU's pid and placed, its live pins set;
//  - libvirt's "started" event (it comes after the hook returned) sets the
//    live pins, so `virsh vcpupin`/`emulatorpin` show what the cgroups hold;
//    a VM the ledger does not hold then started without vrid's decision (the
//    hook found vrid unreachable, or vrid could not record it: its state
//    filesystem full) and is adopted; one whose adoption vrid could not record
//    either is adopted again every pinRetryInterval until it is;
//  - shared-pool moves re-pin the running VMs whose threads use the pool (with
//    cpuset partitions they hold the wide set, which a pod's grant leaves as it is);
//  - "defined" reserves a placement for the VM and writes it into the
//    persistent definition, marked as VRI's; "undefined" drops a reservation,
//    and so does each (re)connect for VMs undefined while vrid or libvirtd was
//    away (no event reached vrid);
//  - a live move (vrictl vcpupin) sets the moved VM's pins, and its definition's with `persistent`;
//  - vCPUs brought online or offline (virsh setvcpus --live: libvirt has no
//    event for it, and no hook runs) are noticed by counting each running VM's
//    online vCPUs every vcpuPollInterval, where it has more than one vCPU id;
//    the ledger is told which run, and the new ones' pins are set;
//  - libvirt's tunable event: pins that differ from what VRI last told libvirt
//    were changed behind its back (virsh vcpupin --live): announced as
//    PINS_DRIFTED, then restored, or adopted (a live move) when configured and they fit.
// Every live pin VRI sets is recorded in the running domain's metadata with the
// request it answers (<vri:cpu>, <vri:placement>), unless the pins are the
// user's own: a save image, a migration stream or vrid adopting the VM then
// reads VRI's pins as VRI's. Pins libvirt refuses are retried until it takes
// them (PINS_PENDING, then PINS_SET).
// Everything runs on the session's worker thread, never inside the hook's call.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/libvirt_session.h"
#include "vri/live_pins.h"
#include "vri/logger.h"
#include "vri/node_manager.h"

namespace vri {

struct LibvirtSyncOptions {
  std::string uri = "qemu:///system";
  std::string qemuPidDir = "/run/libvirt/qemu";
  bool defineTimePlacement = true;
  bool adoptPinDrift = false;                        // see libvirt_pin_drift
  const Clock* clock = &steadyClock();               // what the libvirt connection's back-off waits by; not owned
  std::chrono::milliseconds pinRetryInterval{1000};  // how soon pins libvirt refused are tried again
  std::chrono::milliseconds vcpuPollInterval{1000};  // how often running VMs' online vCPUs are counted
};

class LibvirtSync : public LibvirtHandler, public LivePins {
 public:
  LibvirtSync(NodeManager& node, Logger& log, LibvirtSyncOptions options);
  ~LibvirtSync() override;

  void connected(LibvirtSession& session) override;
  void domainEvent(LibvirtSession& session, const DomainEvent& event) override;
  void setPins(const std::string& uuid, bool persistent, LivePinsDone done) override;

 private:
  // Admits and places a running domain; false when vrid could not record it (kept for a retry).
  // `quiet`: a retry, whose failure was logged the first time.
  bool adopt(LibvirtSession& session, const std::string& liveXml, bool quiet = false);
  // libvirt's started event for a VM the ledger does not hold as running.
  void adoptStarted(LibvirtSession& session, const std::string& uuid);
  void releaseUndefinedReservations(LibvirtSession& session);
  void retryAdoption(LibvirtSession& session);
  // Sets the VM's live pins from the ledger, always.
  void pinFromLedger(LibvirtSession& session, const std::string& uuid);
  // Sets them and VRI's record of them when they differ from what libvirt was
  // last told (or always, with `force`); a failure is logged, announced once and
  // retried. Returns what libvirt answered.
  Result<void> pin(LibvirtSession& session, const VmRecord& vm, const CpuSet& shared, bool force);
  Result<void> setLive(LibvirtSession& session, const VmRecord& vm, const CpuSet& shared, bool force);
  LivePinsOutcome applyMove(LibvirtSession& session, const std::string& uuid, bool persistent);
  // The definition's pins and VRI's record of them after a move with --config: what the running
  // domain was just told, and the definition's record of the domain's own <numatune> kept.
  Result<void> saveInDefinition(LibvirtSession& session, const VmRecord& vm, const VmPins& pins);
  void retryPending(LibvirtSession& session);
  // Counts each running VM's online vCPUs and tells the ledger of a change.
  void checkVcpus(LibvirtSession& session);
  // After libvirt's tunable event: pins someone else set, restored or adopted.
  void checkPins(LibvirtSession& session, const std::string& uuid);
  // A VM that stopped or went: nothing of it is left to tell libvirt.
  void forget(const std::string& uuid);
  void followSharedPool(LibvirtSession& session);
  void placeDefinition(LibvirtSession& session, const std::string& uuid);
  // A stopped domain's definition loses VRI's pins (libvirt_sync_unpin.cc): after its stop event.
  void unpinStopped(LibvirtSession& session, const std::string& uuid);
  // At each connection, every stopped domain, for the stops vrid missed: one the ledger holds as
  // admitted is released, and its definition loses VRI's pins.
  void settleStoppedDomains(LibvirtSession& session);
  void unpinDefinition(LibvirtSession& session, const DomainXml& domain, const std::string& inactiveXml);
  // Whether the ledger holds the VM as reserved at definition only (not admitted to run).
  bool onlyReserved(const std::string& uuid) const;
  void watchEvents();

  NodeManager& node_;
  Logger& log_;
  LibvirtSyncOptions options_;
  struct Told {
    VmPins pins;
    std::string metadata;  // empty: the user's own pins, no record
  };
  std::map<std::string, Told> pinned_;              // worker thread only: what libvirt was last told
  std::map<std::string, std::string> pendingPins_;  // worker thread only: VMs whose pins failed, and why
  std::set<std::string> unadopted_;   // worker thread only: running VMs whose adoption vrid could not record
  std::set<std::string> ownDefines_;  // worker thread only: definitions VRI unpinned, before their define event
  std::atomic<size_t> unadoptedCount_{0};
  std::atomic<bool> adoptionQueued_{false};
  std::atomic<bool> retryQueued_{false};
  std::atomic<bool> vcpuCheckQueued_{false};
  std::atomic<size_t> pendingCount_{0};
  // VMs moved live whose pins libvirt does not hold yet: their live XML still
  // reads as before the move, so adopting them after a reconnect keeps the ledger's placement.
  Mutex movedMutex_;
  std::set<std::string> moved_ VRI_GUARDED_BY(movedMutex_);
  bool awaitsMove(const std::string& uuid) {
    MutexLock lock(movedMutex_);
    return moved_.contains(uuid);
  }
  std::shared_ptr<EventSubscription> events_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> followQueued_{false};  // a shared-pool follow-up waits on the worker
  std::unique_ptr<LibvirtSession> session_;
  std::thread eventsThread_;  // posts to session_: stopped before it
};

}  // namespace vri
