// NriSnapshotRuntime: the pods and containers an NRI runtime reported in one Synchronize, seen
// through RuntimeClient's lists and verbose statuses, so that the kubelet side's one ledger sync
// (ledger_sync.h) judges them as it judges the CRI runtime's lists: what vrid holds that is gone is
// released, running pods and containers vrid does not know are adopted on the CPUs they hold.
// Read-only: every call that would change the runtime is refused (UNIMPLEMENTED).
#pragma once

#include <map>
#include <vector>

#include "kubelet-bridge/partial_runtime.h"
#include "nri/nri_api.pb.h"

namespace vri {

class NriSnapshotRuntime final : public PartialRuntime {
 public:
  NriSnapshotRuntime(const std::vector<::nri::pkg::api::v1alpha1::PodSandbox>& pods,
                     const std::vector<::nri::pkg::api::v1alpha1::Container>& containers);

  Result<std::vector<runtime::v1::PodSandbox>> listPodSandboxes(const CallScope&) override;
  Result<std::vector<runtime::v1::Container>> listContainers(const CallScope&, const std::string& podUid) override;
  Result<runtime::v1::PodSandboxStatusResponse> podSandboxStatus(const CallScope&, const std::string& sandboxId,
                                                                 bool verbose) override;
  Result<runtime::v1::ContainerStatusResponse> containerStatus(const CallScope&, const std::string& containerId,
                                                               bool verbose) override;

 private:
  struct Pod {
    runtime::v1::PodSandbox sandbox;
    runtime::v1::PodSandboxConfig config;
  };
  struct Container {
    runtime::v1::Container container;
    runtime::v1::ContainerConfig config;
    std::string podUid;
  };
  std::map<std::string, Pod> pods_;              // by sandbox id
  std::map<std::string, Container> containers_;  // by container id
};

}  // namespace vri
