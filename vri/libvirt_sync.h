// LibvirtSync: keeps libvirt's view of the VMs in step with the ledger.
//
//  - after every (re)connect, adopts every running domain: its definition is
//    admitted (idempotent; an adopted VM's request is corrected in place), its
//    cgroups found through QEMU's pid and placed, its live pins set;
//  - libvirt's "started" event (it comes after the hook returned) sets the
//    live pins, so `virsh vcpupin`/`emulatorpin` show what the cgroups hold;
//  - shared-pool moves re-pin the running VMs whose threads use the pool;
//  - "defined" reserves a placement for the VM and writes it into the
//    persistent definition, marked as VRI's; "undefined" drops a reservation.
// Everything runs on the session's worker thread, never inside the hook's call.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "libvirt-bridge/libvirt_session.h"
#include "vri/logger.h"
#include "vri/node_manager.h"

namespace vri {

struct LibvirtSyncOptions {
  std::string uri = "qemu:///system";
  std::string qemuPidDir = "/run/libvirt/qemu";
  bool defineTimePlacement = true;
  const Clock* clock = &steadyClock();  // what the libvirt connection's back-off waits by; not owned
};

class LibvirtSync : public LibvirtHandler {
 public:
  LibvirtSync(NodeManager& node, Logger& log, LibvirtSyncOptions options);
  ~LibvirtSync() override;

  void connected(LibvirtSession& session) override;
  void domainEvent(LibvirtSession& session, const DomainEvent& event) override;

 private:
  void adopt(LibvirtSession& session, const std::string& liveXml);
  // Sets the VM's live pins from the ledger, always.
  void pinFromLedger(LibvirtSession& session, const std::string& uuid);
  // Sets them when they differ from what libvirt was last told (or always, with `force`).
  void pin(LibvirtSession& session, const VmRecord& vm, const CpuSet& shared, bool force);
  void followSharedPool(LibvirtSession& session);
  void placeDefinition(LibvirtSession& session, const std::string& uuid);
  // Whether the ledger holds the VM as reserved at definition only (not admitted to run).
  bool onlyReserved(const std::string& uuid) const;
  void watchEvents();

  NodeManager& node_;
  Logger& log_;
  LibvirtSyncOptions options_;
  std::map<std::string, VmPins> pinned_;  // worker thread only: what libvirt was last told
  std::shared_ptr<EventSubscription> events_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> followQueued_{false};  // a shared-pool follow-up waits on the worker
  std::unique_ptr<LibvirtSession> session_;
  std::thread eventsThread_;  // posts to session_: stopped before it
};

}  // namespace vri
