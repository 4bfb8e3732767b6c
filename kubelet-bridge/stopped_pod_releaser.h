// StoppedPodReleaser: frees a pod's CPUs and memory in vrid once kubelet is done with it, without
// waiting for kubelet's garbage collection to remove its sandbox (about a minute after a deletion).
//
// No one signal says "done": kubelet stops a sandbox (StopPodSandbox) before it deletes a pod, but
// also before it re-creates the sandbox of a pod it keeps; its pod-resources List names the pods
// it still runs, but right after kubelet starts it can answer before its pod sources are read. So
// a pod is released when both hold: kubelet stopped the sandbox vrid has bound to it, and List has
// not named the pod for `absentPolls` polls in a row, every one of them with kubelet's
// pod-resources server up for at least `kubeletSettled`. A sandbox re-created in the meantime
// takes the pod off the list (vrid binds the new one), and the release names the stopped sandbox,
// so vrid releases nothing it no longer holds under that sandbox. Without kubelet's socket nothing
// is released early: the sandbox's removal stays the release, as before.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/result.h"
#include "base/thread_annotations.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

// What kubelet says of its pods (kubelet_pod_resources.h asks the real one).
class KubeletPods {
 public:
  virtual ~KubeletPods() = default;
  // The pods kubelet still runs, as "namespace/name"; an error when it does not answer.
  virtual Result<std::set<std::string>> activePods(std::chrono::milliseconds timeout) = 0;
  // How long kubelet's pod-resources server has been up; nothing when it is not there.
  virtual std::optional<std::chrono::seconds> upFor() = 0;
};

struct StoppedPodReleaserOptions {
  std::chrono::milliseconds poll{1000};  // between Lists while a stopped sandbox waits
  int absentPolls = 3;                   // Lists in a row that must not name the pod
  std::chrono::seconds kubeletSettled{30};
  std::chrono::milliseconds callTimeout{2000};
  const Clock* clock = &steadyClock();  // not owned
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class StoppedPodReleaser {
 public:
  // Both clients (not owned) outlive the releaser.
  StoppedPodReleaser(VridClient& vrid, KubeletPods& kubelet, StoppedPodReleaserOptions options);
  ~StoppedPodReleaser();  // the thread stopped and joined

  // A thread that polls while a stopped sandbox waits.
  void start();
  // kubelet stopped `sandboxId` (the shim's StopPodSandbox, the NRI plugin's event).
  void sandboxStopped(const std::string& sandboxId);
  // The sandbox was removed: its removal released the pod.
  void sandboxRemoved(const std::string& sandboxId);

  // One round: kubelet's List and vrid's pods compared for every stopped sandbox. The thread calls
  // it every `poll`; tests call it themselves.
  void poll();

  size_t waiting() const;
  uint64_t released() const { return released_.load(); }

 private:
  struct Stopped {
    std::string pod;  // "namespace/name", once vrid named it
    int absent = 0;   // Lists in a row without it
  };
  void run();
  void markDone(const std::string& sandboxId) VRI_REQUIRES(mutex_);
  static constexpr size_t kDoneLimit = 4096;

  VridClient& vrid_;
  KubeletPods& kubelet_;
  StoppedPodReleaserOptions options_;
  std::atomic<uint64_t> released_{0};

  mutable Mutex mutex_;
  std::condition_variable_any wake_;
  std::map<std::string, Stopped> stopped_ VRI_GUARDED_BY(mutex_);  // by sandbox id
  // Sandboxes already dealt with (released, or found re-created): a stop said again of one (the NRI
  // plugin's sweep sees it stopped until it is removed) starts nothing. Forgotten at the removal.
  std::set<std::string> done_ VRI_GUARDED_BY(mutex_);
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace vri
