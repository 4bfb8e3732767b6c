// NriSandboxSweeper: releases the pods whose removal the runtime does not relay through NRI.
// containerd (2.0 to 2.4) keeps no NRI state for a pod across its own restart, and relays no
// RemovePodSandbox for a pod created before it: vrid would hold such a pod, exclusive CPUs and all,
// until the plugin's next synchronization. So every sandbox a Synchronize reports is watched, until
// its removal is relayed or the runtime's CRI no longer lists it, which the sweeper checks every
// `interval` (one ListPodSandbox, and only while some sandbox is watched); a sandbox gone from the
// list has its pod released by sandbox id, as a relayed removal would. Nor does the runtime relay
// StopPodSandbox for such a pod: a watched sandbox the list shows stopped (not ready) is handed to
// `releaser`, when there is one, as a relayed stop would be.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"
#include "kubelet-bridge/runtime_client.h"
#include "kubelet-bridge/stopped_pod_releaser.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

class NriSandboxSweeper {
 public:
  using Log = std::function<void(const std::string&)>;
  // `vrid` and `cri` (the runtime's CRI endpoint; not owned) outlive the sweeper.
  NriSandboxSweeper(VridClient& vrid, RuntimeClient& cri, std::chrono::milliseconds interval, Log log,
                    StoppedPodReleaser* releaser = nullptr);
  ~NriSandboxSweeper();  // stops; a sweep in progress finishes
  NriSandboxSweeper(const NriSandboxSweeper&) = delete;
  NriSandboxSweeper& operator=(const NriSandboxSweeper&) = delete;

  // The sandboxes a Synchronize reported: watched from now on.
  void watch(const std::vector<std::string>& sandboxIds);
  // A removal the runtime relayed: no longer watched.
  void removed(const std::string& sandboxId);
  // How many sandboxes are watched, and how many sweeps have run (tests).
  size_t watched() const;
  uint64_t sweeps() const { return sweeps_.load(); }

 private:
  void run();
  void sweep();

  VridClient& vrid_;
  RuntimeClient& cri_;
  const std::chrono::milliseconds interval_;
  const Log log_;
  StoppedPodReleaser* const releaser_;  // not owned; may be none
  std::atomic<uint64_t> sweeps_{0};
  mutable Mutex mutex_;
  std::condition_variable_any wake_;
  std::set<std::string> watched_ VRI_GUARDED_BY(mutex_);
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace vri
