#include "kubelet-bridge/nri-plugin/nri_sandbox_sweeper.h"

#include <algorithm>

namespace vri {

NriSandboxSweeper::NriSandboxSweeper(VridClient& vrid, RuntimeClient& cri, std::chrono::milliseconds interval, Log log,
                                     StoppedPodReleaser* releaser)
    : vrid_(vrid), cri_(cri), interval_(interval), log_(std::move(log)), releaser_(releaser), thread_([this] {
        run();
      }) {}

NriSandboxSweeper::~NriSandboxSweeper() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void NriSandboxSweeper::watch(const std::vector<std::string>& sandboxIds) {
  MutexLock lock(mutex_);
  watched_.insert(sandboxIds.begin(), sandboxIds.end());
}

void NriSandboxSweeper::removed(const std::string& sandboxId) {
  MutexLock lock(mutex_);
  watched_.erase(sandboxId);
}

size_t NriSandboxSweeper::watched() const {
  MutexLock lock(mutex_);
  return watched_.size();
}

void NriSandboxSweeper::run() {
  while (true) {
    {
      MutexLock lock(mutex_);
      const auto next = std::chrono::steady_clock::now() + interval_;
      while (!stopping_ && lock.waitUntil(wake_, next) != std::cv_status::timeout) {
      }
      if (stopping_) return;
      if (watched_.empty()) continue;
    }
    sweep();
  }
}

void NriSandboxSweeper::sweep() {
  const auto listed = cri_.listPodSandboxes(CallScope::within(interval_));
  if (!listed.ok()) return;  // the runtime restarting: its next Synchronize reports what it has
  std::set<std::string> present, stopped;
  for (const auto& sandbox : *listed) {
    present.insert(sandbox.id());
    if (sandbox.state() != runtime::v1::SANDBOX_READY) stopped.insert(sandbox.id());
  }
  std::vector<std::string> gone;
  {
    MutexLock lock(mutex_);
    for (const std::string& id : watched_) {
      if (!present.count(id)) gone.push_back(id);
      if (releaser_ != nullptr && stopped.count(id)) releaser_->sandboxStopped(id);  // a second time is a no-op
    }
  }
  for (const std::string& id : gone) {
    v1::ReleasePodRequest request;
    request.set_sandbox_id(id);
    const Result<bool> released = vrid_.releasePod(CallScope::within(interval_), request);
    if (!released.ok()) continue;  // vrid away: the next sweep tries again
    log_("sandbox " + id.substr(0, 13) + " is gone from the runtime, which relayed no removal for it; " +
         (*released ? "its pod released" : "vrid held nothing under its id"));
    MutexLock lock(mutex_);
    watched_.erase(id);
  }
  ++sweeps_;
}

}  // namespace vri
