#include "kubelet-bridge/stopped_pod_releaser.h"

#include <vector>

namespace vri {

StoppedPodReleaser::StoppedPodReleaser(VridClient& vrid, KubeletPods& kubelet, StoppedPodReleaserOptions options)
    : vrid_(vrid), kubelet_(kubelet), options_(std::move(options)) {}

StoppedPodReleaser::~StoppedPodReleaser() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StoppedPodReleaser::start() {
  thread_ = std::thread([this] { run(); });
}

void StoppedPodReleaser::sandboxStopped(const std::string& sandboxId) {
  if (sandboxId.empty()) return;
  {
    MutexLock lock(mutex_);
    if (done_.count(sandboxId) != 0) return;
    stopped_.try_emplace(sandboxId);  // a second stop of the same sandbox starts nothing again
  }
  wake_.notify_all();
}

void StoppedPodReleaser::sandboxRemoved(const std::string& sandboxId) {
  MutexLock lock(mutex_);
  stopped_.erase(sandboxId);
  done_.erase(sandboxId);
}

size_t StoppedPodReleaser::waiting() const {
  MutexLock lock(mutex_);
  return stopped_.size();
}

void StoppedPodReleaser::markDone(const std::string& sandboxId) {
  // Removals the runtime never relays would keep ids here: bounded, forgetting all at once (a
  // forgotten one that is stopped again is only looked at again).
  if (done_.size() >= kDoneLimit) done_.clear();
  done_.insert(sandboxId);
}

void StoppedPodReleaser::run() {
  for (;;) {
    {
      MutexLock lock(mutex_);
      while (!stopping_ && stopped_.empty()) options_.clock->wait(lock, wake_);
      const Clock::TimePoint next = options_.clock->now() + options_.poll;
      while (!stopping_ && !options_.clock->waitUntil(lock, wake_, next)) {
      }
      if (stopping_) return;
    }
    poll();
  }
}

void StoppedPodReleaser::poll() {
  std::map<std::string, Stopped> stopped;
  {
    MutexLock lock(mutex_);
    if (stopped_.empty()) return;
    stopped = stopped_;
  }
  // Only a kubelet that has been up a while is believed when it does not name a pod.
  const std::optional<std::chrono::seconds> up = kubelet_.upFor();
  const bool settled = up.has_value() && *up >= options_.kubeletSettled;
  Result<std::set<std::string>> active = Error(ErrorCode::kUnavailable, "kubelet not settled");
  if (settled) active = kubelet_.activePods(options_.callTimeout);
  auto pods = vrid_.listPods(CallScope::within(options_.callTimeout));
  if (!pods.ok()) return;  // vrid away: the next round asks again

  std::map<std::string, std::string> podOfSandbox;
  for (const v1::Tenant& tenant : pods->tenants()) {
    if (tenant.has_pod() && !tenant.pod().sandbox_id().empty())
      podOfSandbox[tenant.pod().sandbox_id()] = tenant.pod().name();
  }
  std::vector<std::string> forget, release;
  for (auto& [sandbox, entry] : stopped) {
    const auto bound = podOfSandbox.find(sandbox);
    if (bound == podOfSandbox.end()) {
      forget.push_back(sandbox);  // released already, or its pod runs in a new sandbox
      continue;
    }
    entry.pod = bound->second;
    if (!active.ok()) {
      entry.absent = 0;  // nothing counts while kubelet settles or does not answer
    } else if (active->count(entry.pod) != 0) {
      entry.absent = 0;
    } else if (++entry.absent >= options_.absentPolls) {
      release.push_back(sandbox);
    }
  }
  {
    MutexLock lock(mutex_);
    for (const std::string& sandbox : forget) {
      stopped_.erase(sandbox);
      markDone(sandbox);
    }
    for (const auto& [sandbox, entry] : stopped) {
      const auto still = stopped_.find(sandbox);  // removed meanwhile: its removal released it
      if (still != stopped_.end()) still->second = entry;
    }
  }
  for (const std::string& sandbox : release) {
    v1::ReleasePodRequest request;
    request.set_sandbox_id(sandbox);  // guarded: only while vrid holds the pod under this sandbox
    const Result<bool> released = vrid_.releasePod(CallScope::within(options_.callTimeout), request);
    if (!released.ok()) {
      options_.log("pod " + stopped[sandbox].pod + ": release failed (" + released.error().message() +
                   "); trying again");
      continue;
    }
    {
      MutexLock lock(mutex_);
      stopped_.erase(sandbox);
      markDone(sandbox);
    }
    if (*released) {
      ++released_;
      options_.log("pod " + stopped[sandbox].pod + ": released: kubelet stopped sandbox " + sandbox +
                   " and has not listed the pod in " + std::to_string(options_.absentPolls) + " polls");
    }
  }
}

}  // namespace vri
