// Between the API's messages and the ledger's values. Requests are checked
// here, so a refusal names the field it is about ("vcpus: must be at least 1").
#pragma once

#include "accounting/capacity_books.h"
#include "accounting/ledger.h"
#include "accounting/node_allocatable.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/node_tree.h"
#include "proto/vri.pb.h"
#include "vri/cgroup_sync.h"
#include "vri/config_diff.h"
#include "vri/event_hub.h"

namespace vri {

Result<QosClass> qosFrom(v1::Qos qos);
v1::Qos qosTo(QosClass qos);

// The pod of an admit; its QoS class as given or read from its cgroup parent by `namer` (the node's).
Result<PodSpec> podFrom(const v1::AdmitContainerRequest& request, const KubeletNamer& namer);
Result<PodSpec> podFrom(const v1::AdmitPodRequest& request, const KubeletNamer& namer);
Result<ContainerSpec> containerFrom(const v1::AdmitContainerRequest& request);
Result<ContainerSpec> containerFrom(const v1::ContainerResources& resources);
Result<VmSpec> vmFrom(const v1::AdmitVmRequest& request);
v1::AdmitVmRequest vmRequestFrom(const VmSpec& vm);

// Everything the runtime writes for the container: cpuset, the cpu and memory
// values kubelet would compute, and the cgroup path once the id is known
// (named by `namer`, the node's kubelet namer, made once by the caller).
void fillContainerAllocation(const PodSpec& pod, const ContainerSpec& container, const ContainerPlacement& placement,
                             const KubeletNamer& namer, v1::ContainerAllocation& out);
void fillVmAllocation(const VmCpuRequest& request, const VmCpuPlacement& placement, const CpuSet& shared,
                      v1::VmAllocation& out);
v1::Event toEventMessage(const Event& event);
// The node's books, as GetNode carries them.
void fillCapacity(const CapacityBooks& books, v1::Capacity& out);
// vrictl's tree: each desired cgroup with its tenant and files, and what a compared view found.
void fillCgroupTree(const TreeView& view, CgroupVersion version, KubeletDriver driver, v1::CgroupTree& out);
// `shared`: the pool its shared containers run on (what vrictl shows); `wideShared`: the shared cgroups'
// cpuset.cpus (CgroupSync::wideSharedCpus), of which the pod's own partitions are left out for what
// its shared containers' runtime is told.
void fillPodInfo(const PodRecord& pod, const CpuSet& shared, const CpuSet& wideShared, const KubeletNamer& namer,
                 v1::PodInfo& out);
void fillVmInfo(const VmRecord& vm, const CpuSet& shared, const std::optional<CgroupPath>& scope, uint64_t memoryBytes,
                v1::VmInfo& out);

// DiffConfig's reply: the settings, the placement policy's plan, kubelet's disagreements.
void fillConfigDiff(const ConfigDiff& diff, v1::ConfigDiffReply& out);

}  // namespace vri
