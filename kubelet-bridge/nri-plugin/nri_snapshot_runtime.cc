#include "kubelet-bridge/nri-plugin/nri_snapshot_runtime.h"

#include "kubelet-bridge/ledger_sync.h"
#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"

namespace vri {

namespace api = ::nri::pkg::api::v1alpha1;

NriSnapshotRuntime::NriSnapshotRuntime(const std::vector<api::PodSandbox>& pods,
                                       const std::vector<api::Container>& containers)
    : PartialRuntime("an NRI synchronization is read-only") {
  for (const api::PodSandbox& p : pods) {
    Pod& pod = pods_[p.id()];
    pod.sandbox.set_id(p.id());
    pod.sandbox.set_state(runtime::v1::SANDBOX_READY);  // NRI reports the pods the runtime has
    auto* metadata = pod.sandbox.mutable_metadata();
    metadata->set_name(p.name());
    metadata->set_uid(p.uid());
    metadata->set_namespace_(p.namespace_());
    for (const auto& [key, value] : p.labels()) (*pod.sandbox.mutable_labels())[key] = value;
    pod.config = nri_terms::criPodConfig(p);
  }
  for (const api::Container& c : containers) {
    Container& container = containers_[c.id()];
    container.container.set_id(c.id());
    container.container.set_pod_sandbox_id(c.pod_sandbox_id());
    container.container.mutable_metadata()->set_name(c.name());
    container.container.set_state(nri_terms::criState(c.state()));
    for (const auto& [key, value] : c.labels()) (*container.container.mutable_labels())[key] = value;
    *container.config.mutable_metadata() = container.container.metadata();
    *container.config.mutable_labels() = container.container.labels();
    for (const auto& [key, value] : c.annotations()) (*container.config.mutable_annotations())[key] = value;
    *container.config.mutable_linux()->mutable_resources() = nri_terms::criResources(c.linux().resources());
    const auto pod = pods_.find(c.pod_sandbox_id());
    container.podUid = pod != pods_.end() ? pod->second.sandbox.metadata().uid() : "";
  }
}

Result<std::vector<runtime::v1::PodSandbox>> NriSnapshotRuntime::listPodSandboxes(const CallScope&) {
  std::vector<runtime::v1::PodSandbox> out;
  for (const auto& [id, pod] : pods_) out.push_back(pod.sandbox);
  return out;
}

Result<std::vector<runtime::v1::Container>> NriSnapshotRuntime::listContainers(const CallScope&,
                                                                               const std::string& podUid) {
  std::vector<runtime::v1::Container> out;
  for (const auto& [id, c] : containers_) {
    if (podUid.empty() || c.podUid == podUid) out.push_back(c.container);
  }
  return out;
}

Result<runtime::v1::PodSandboxStatusResponse> NriSnapshotRuntime::podSandboxStatus(const CallScope&,
                                                                                   const std::string& sandboxId,
                                                                                   bool verbose) {
  const auto found = pods_.find(sandboxId);
  if (found == pods_.end()) return Error::notFound("sandbox " + sandboxId + " is not in the runtime's NRI report");
  runtime::v1::PodSandboxStatusResponse out;
  if (verbose) (*out.mutable_info())["info"] = verboseInfoWithConfig(found->second.config);
  return out;
}

Result<runtime::v1::ContainerStatusResponse> NriSnapshotRuntime::containerStatus(const CallScope&,
                                                                                 const std::string& containerId,
                                                                                 bool verbose) {
  const auto found = containers_.find(containerId);
  if (found == containers_.end()) {
    return Error::notFound("container " + containerId + " is not in the runtime's NRI report");
  }
  runtime::v1::ContainerStatusResponse out;
  out.mutable_status()->set_id(containerId);
  out.mutable_status()->set_state(found->second.container.state());
  *out.mutable_status()->mutable_resources()->mutable_linux() = found->second.config.linux().resources();
  if (verbose) (*out.mutable_info())["info"] = verboseInfoWithConfig(found->second.config);
  return out;
}

}  // namespace vri
