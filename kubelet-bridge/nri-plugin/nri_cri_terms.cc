#include "kubelet-bridge/nri-plugin/nri_cri_terms.h"

namespace vri::nri_terms {

runtime::v1::LinuxContainerResources criResources(const api::LinuxResources& nri) {
  runtime::v1::LinuxContainerResources out;
  if (nri.cpu().has_shares()) out.set_cpu_shares(static_cast<int64_t>(nri.cpu().shares().value()));
  if (nri.cpu().has_quota()) out.set_cpu_quota(nri.cpu().quota().value());
  if (nri.cpu().has_period()) out.set_cpu_period(static_cast<int64_t>(nri.cpu().period().value()));
  if (nri.memory().has_limit()) out.set_memory_limit_in_bytes(nri.memory().limit().value());
  out.set_cpuset_cpus(nri.cpu().cpus());
  out.set_cpuset_mems(nri.cpu().mems());
  for (const auto& [key, value] : nri.unified()) (*out.mutable_unified())[key] = value;
  for (const api::HugepageLimit& pages : nri.hugepage_limits()) {
    runtime::v1::HugepageLimit& limit = *out.add_hugepage_limits();
    limit.set_page_size(pages.page_size());
    limit.set_limit(pages.limit());
  }
  return out;
}

api::LinuxResources nriResources(const runtime::v1::LinuxContainerResources& cri) {
  api::LinuxResources out;
  api::LinuxCPU& cpu = *out.mutable_cpu();
  cpu.set_cpus(cri.cpuset_cpus());
  cpu.set_mems(cri.cpuset_mems());
  if (cri.cpu_shares() > 0) cpu.mutable_shares()->set_value(static_cast<uint64_t>(cri.cpu_shares()));
  if (cri.cpu_period() > 0) cpu.mutable_period()->set_value(static_cast<uint64_t>(cri.cpu_period()));
  if (cri.cpu_quota() != 0) cpu.mutable_quota()->set_value(cri.cpu_quota());  // -1: no quota
  if (cri.memory_limit_in_bytes() > 0) out.mutable_memory()->mutable_limit()->set_value(cri.memory_limit_in_bytes());
  for (const auto& [key, value] : cri.unified()) (*out.mutable_unified())[key] = value;
  return out;
}

runtime::v1::ContainerState criState(api::ContainerState state) {
  switch (state) {
    case api::CONTAINER_CREATED: return runtime::v1::CONTAINER_CREATED;
    case api::CONTAINER_RUNNING:
    case api::CONTAINER_PAUSED: return runtime::v1::CONTAINER_RUNNING;
    case api::CONTAINER_STOPPED: return runtime::v1::CONTAINER_EXITED;
    default: return runtime::v1::CONTAINER_UNKNOWN;
  }
}

runtime::v1::PodSandboxConfig criPodConfig(const api::PodSandbox& pod) {
  runtime::v1::PodSandboxConfig out;
  auto* metadata = out.mutable_metadata();
  metadata->set_name(pod.name());
  metadata->set_uid(pod.uid());
  metadata->set_namespace_(pod.namespace_());
  for (const auto& [key, value] : pod.labels()) (*out.mutable_labels())[key] = value;
  for (const auto& [key, value] : pod.annotations()) (*out.mutable_annotations())[key] = value;
  out.mutable_linux()->set_cgroup_parent(pod.linux().cgroup_parent());
  if (pod.linux().has_pod_overhead()) {
    *out.mutable_linux()->mutable_overhead() = criResources(pod.linux().pod_overhead());
  }
  return out;
}

runtime::v1::CreateContainerRequest criCreateRequest(const api::PodSandbox& pod, const api::Container& container) {
  runtime::v1::CreateContainerRequest out;
  out.set_pod_sandbox_id(pod.id());
  *out.mutable_sandbox_config() = criPodConfig(pod);
  runtime::v1::ContainerConfig& config = *out.mutable_config();
  config.mutable_metadata()->set_name(container.name());
  for (const auto& [key, value] : container.labels()) (*config.mutable_labels())[key] = value;
  for (const auto& [key, value] : container.annotations()) (*config.mutable_annotations())[key] = value;
  *config.mutable_linux()->mutable_resources() = criResources(container.linux().resources());
  return out;
}

}  // namespace vri::nri_terms
