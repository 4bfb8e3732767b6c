// The node's NodeResourceTopology object (topology.node.k8s.io/v1alpha2), built from what vrid says
// of the node (GetNode) and of its pods (ListTenants): one zone per NUMA node with its distances,
// and per zone cpu, memory and each hugepage size the node has, as capacity, allocatable (less what
// is reserved, as kubelet counts it) and available (what vrid would grant now: VMs, pods and
// tenants admitted but not started all count). The attributes name the topology manager's policy
// and scope as vrid applies them, and the pods fingerprint the scheduler's reserve cache checks.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "proto/vri.pb.h"

namespace vri::topology_export {

// The object, without resourceVersion: what a create or a merge patch sends.
nlohmann::json topologyObject(const std::string& nodeName, const v1::Node& node, const v1::TenantList& pods);

// The fingerprint's pods: every Guaranteed pod vrid holds (the scheduler counts every bound
// Guaranteed pod, whose memory is exclusive to it), named namespace/name.
std::string fingerprintOfPods(const v1::TenantList& pods);

// "2Mi", "1Gi": a hugepage size as Kubernetes names its resource (hugepages-<size>).
std::string hugepageSizeName(uint64_t bytes);

}  // namespace vri::topology_export
