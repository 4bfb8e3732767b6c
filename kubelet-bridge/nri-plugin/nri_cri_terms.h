// NRI's pods, containers and resources in CRI's terms, and back: the same facts in the other
// protocol's messages, so that the kubelet side's one core (cri_translate.h: what a pod or a
// container asks of vrid, vrid's allocation as the runtime's resources, which containers are
// finished) serves the NRI plugin as it serves the CRI shim. Representation only: no rule of
// VRI's lives here.
#pragma once

#include "kubelet-bridge/cri.pb.h"
#include "nri/nri_api.pb.h"

namespace vri::nri_terms {

namespace api = ::nri::pkg::api::v1alpha1;

// Resources: shares, quota and period, memory limit, CPUs and memory nodes, the unified map.
runtime::v1::LinuxContainerResources criResources(const api::LinuxResources& nri);
// Back, as an adjustment: what is set in CRI's message (a CPU list, shares, a period, a quota other
// than 0, a memory limit, unified keys) is set in NRI's; what is unset stays the container's own.
api::LinuxResources nriResources(const runtime::v1::LinuxContainerResources& cri);

runtime::v1::ContainerState criState(api::ContainerState state);

// The sandbox's configuration as kubelet gave it: metadata, labels, annotations, cgroup parent
// and the pod's overhead.
runtime::v1::PodSandboxConfig criPodConfig(const api::PodSandbox& pod);

// CreateContainer as kubelet sent it to the runtime: the container's name, labels, annotations
// and resources, in its pod's sandbox.
runtime::v1::CreateContainerRequest criCreateRequest(const api::PodSandbox& pod, const api::Container& container);

}  // namespace vri::nri_terms
