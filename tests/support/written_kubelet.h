// WrittenKubelet: kubelet's pod-resources answers as a test writes them (StoppedPodReleaser's seam).
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "kubelet-bridge/stopped_pod_releaser.h"

namespace vri::testing {

class WrittenKubelet final : public KubeletPods {
 public:
  Result<std::set<std::string>> activePods(std::chrono::milliseconds) override {
    std::lock_guard lock(mutex);
    if (!answers) return Error(ErrorCode::kUnavailable, "connection refused");
    return active;
  }
  std::optional<std::chrono::seconds> upFor() override {
    std::lock_guard lock(mutex);
    return up;
  }
  std::mutex mutex;
  std::set<std::string> active;
  std::optional<std::chrono::seconds> up = std::chrono::seconds(600);
  bool answers = true;
};

}  // namespace vri::testing
