// KubeletPodResources: kubelet's pod-resources socket (/var/lib/kubelet/pod-resources/kubelet.sock)
// as StoppedPodReleaser asks it: which pods kubelet still runs, and since when its server is up
// (the socket's time: kubelet makes the socket afresh each time it starts).
#pragma once

#include <memory>
#include <string>

#include "kubelet-bridge/podresources.grpc.pb.h"
#include "kubelet-bridge/stopped_pod_releaser.h"

namespace vri {

inline constexpr const char* kKubeletPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

class KubeletPodResources final : public KubeletPods {
 public:
  explicit KubeletPodResources(std::string socketPath);

  // kubelet's List: since Kubernetes 1.34 only the pods it has not finished with.
  Result<std::set<std::string>> activePods(std::chrono::milliseconds timeout) override;
  std::optional<std::chrono::seconds> upFor() override;

 private:
  std::string socketPath_;
  std::unique_ptr<::v1::PodResourcesLister::Stub> stub_;
};

}  // namespace vri
