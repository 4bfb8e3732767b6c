// vrid's hook socket: where vri-hook hands over one run of libvirt's qemu
// hook (argv and the domain XML, proto/hook_call.proto) and gets back what to
// print and exit with. The hook logic (libvirt-bridge/hook.h) runs here,
// inside vrid, and decides through the admin service's AdmitVm, VmStarted and
// ReleaseVm, so that the program libvirt starts several times per VM start
// loads no gRPC, protobuf or libxml2 and is done in about a millisecond.
//
// One call per connection. The socket is root's alone (mode 0600), like the
// admin socket: whoever connects starts and places VMs. A caller gets
// kReadTimeout to send its call; at most kMaxConnections are served or queued
// at once, the rest wait in the listen backlog (the hook's own deadline
// bounds how long).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/worker_pool.h"
#include "vri/logger.h"
#include "vri/vri_service.h"

namespace vri {

class HookDoor {
 public:
  static constexpr int kServingThreads = 4;
  static constexpr int kMaxConnections = 64;
  static constexpr std::chrono::seconds kReadTimeout{10};

  // Listens on `path` (claimed and prepared by the caller, SocketClaim) with mode 0600. `admin`
  // (the admin socket's service) and `log` outlive the door.
  static Result<std::unique_ptr<HookDoor>> open(const std::string& path, VriService& admin, Logger& log);
  ~HookDoor();
  HookDoor(const HookDoor&) = delete;
  HookDoor& operator=(const HookDoor&) = delete;

  // Stops accepting and answers every call already accepted (once vrid's call gate is closed, with
  // the hook's answer for a vrid that cannot decide). Idempotent.
  void close();

 private:
  HookDoor(std::string path, int listenFd, int wakeFd, VriService& admin, Logger& log);
  void acceptLoop();
  void serve(int fd);

  const std::string path_;
  const int listenFd_;
  const int wakeFd_;  // an eventfd: close() wakes the accepting thread with it
  VriService& admin_;
  Logger& log_;
  std::atomic<int> connections_{0};  // accepted and not yet answered
  bool closed_ = false;
  std::unique_ptr<WorkerPool> serving_;
  std::thread acceptor_;  // last: it starts once everything it reads is there
};

}  // namespace vri
