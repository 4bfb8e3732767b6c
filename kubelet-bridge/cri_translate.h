// Between CRI's messages, as kubelet sends them, and vrid's API: what a sandbox
// or a container asks for, and vrid's allocation written back into the
// runtime's resources. Pure functions; the shim's calls are in cri_shim.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kubelet-bridge/cri.pb.h"
#include "proto/vri.pb.h"

namespace vri::cri {

// kubelet's CPU values turned back into milli-CPU: shares are milli * 1024 /
// 1000 (at least 2, which means no request), the quota is milli * period / 1000.
// Values no kubelet writes (shares past 262144 or negative, a period past one
// second, a quota below -1 or past what any node holds) are refused, naming
// the CRI field, before any arithmetic on them.
Result<int64_t> requestMilliFromShares(int64_t shares);
// A hugepage size as CRI names it ("2MB", "1GB": binary units), in bytes.
Result<uint64_t> hugepageSizeBytes(std::string_view text);
Result<int64_t> limitMilliFromQuota(int64_t quota, int64_t period);

// RunPodSandbox's config as a pod admit (no sandbox id yet). A sandbox without
// a cgroup parent is a pod outside kubelet's tree (AdmitPodRequest in vri.proto).
Result<v1::AdmitPodRequest> admitPodRequest(const runtime::v1::PodSandboxConfig& config);
// CreateContainer as a container admit, keyed by the pod's UID and the
// container's name, with the pod's cgroup parent: vrid reads the QoS class from it.
Result<v1::AdmitContainerRequest> admitContainerRequest(const runtime::v1::CreateContainerRequest& request);
// UpdateContainerResources as a resize of the container that holds the id.
Result<v1::AdmitContainerRequest> resizeRequest(const runtime::v1::UpdateContainerResourcesRequest& request);

// What the node looks like to the runtime's cgroup writer.
struct NodeCgroups {
  bool v2 = false;
  std::string allMems;  // every memory node ("0-1"): cpuset.mems when vrid binds none
};

// What vrid's node says of its cgroups; refused when it does not say its cgroup version.
Result<NodeCgroups> nodeCgroups(const v1::Node& node);

// vrid's allocation into the runtime's resources, with full explicit values:
// containerd and runc read "" and 0 as "keep what is there". No quota is -1;
// `unified` (cpu.weight, so runc and vrid agree) only on v2, where runc takes it.
// For a pod outside kubelet's tree, only cpuset_cpus (the shared pool): the
// rest is left as its client asked, and "" and 0 keep the runtime's values.
void applyAllocation(const v1::ContainerAllocation& allocation, const NodeCgroups& node,
                     runtime::v1::LinuxContainerResources& resources);

// One instance of a container of the pod, as the runtime lists it.
struct SeenContainer {
  std::string name;
  std::string sandboxId;
  runtime::v1::ContainerState state = runtime::v1::CONTAINER_CREATED;
  int exitCode = 0;  // meaningful once exited
};

// The pod's containers that have exited for good when `creating` is created in
// `currentSandbox`: every instance exited, and either in a replaced sandbox or
// with exit code 0 (a completed init container; kubelet creates the next
// container only once it has). A container with any instance running or
// created is not finished (a sidecar, a restart in progress).
std::vector<std::string> finishedContainers(const std::vector<SeenContainer>& seen, const std::string& creating,
                                            const std::string& currentSandbox);

}  // namespace vri::cri
