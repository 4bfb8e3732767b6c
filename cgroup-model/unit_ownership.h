// Which systemd unit a cgroup is, and whether systemd keeps its values.
//
// Under systemd, kubelet's systemd driver and libvirt's machined put every
// tenant in a unit: kubepods.slice, the QoS slices and the pod slices (kubelet),
// cri-containerd-<id>.scope (runc, for containerd), machine.slice and the
// machine-qemu…scope of each VM (machined). systemd rewrites a unit's cgroup
// files from its properties; it never writes below a delegated scope (the
// scope's libvirt/ subtree, a container's own children).
//
// Who writes what (docs/architecture.md's table):
//   unit                          AllowedCPUs/MemoryNodes   CPUWeight, CPUQuota, MemoryMax
//   kubepods.slice, QoS slices    VRI, through systemd      kubelet (VRI with ownership=everything)
//   Guaranteed pod slices         VRI, through systemd      kubelet (VRI with ownership=everything)
//   Burstable/BestEffort pod      unset: the QoS slice's    kubelet (VRI with ownership=everything)
//   container scopes              runc, from the shim's     runc, from kubelet's requests
//                                 UpdateContainerResources
//   machine.slice                 VRI, through systemd      VRI, through systemd (CPUWeight)
//   machine scopes                unset: machine.slice's    VRI, through systemd (CPUWeight)
//   libvirt/ below a scope        VRI and libvirt, in the files (systemd never rewrites them)
#pragma once

#include <string_view>

#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/node_tree.h"

namespace vri {

enum class UnitKind {
  kNotAUnit,        // a cgroupfs-driver or no-systemd cgroup, or outside kubepods and the machine partition
  kKubepodsSlice,   // kubepods.slice
  kQosSlice,        // kubepods-burstable.slice, kubepods-besteffort.slice
  kGuaranteedPod,   // kubepods-pod<uid>.slice
  kQosPod,          // kubepods-burstable-pod<uid>.slice, kubepods-besteffort-pod<uid>.slice
  kContainerScope,  // cri-containerd-<id>.scope (and other runtimes' scopes)
  kMachineSlice,    // machine.slice
  kMachineScope,    // machine-qemu\x2d<id>\x2d<name>.scope
  kDelegated,       // below a machine scope: libvirt's own cgroups
};

std::string_view unitKindName(UnitKind kind);

// What `path` is under `layout`: kubelet's units with the systemd driver, machined's with a
// systemd libvirt layout whose machine partition is a slice.
UnitKind unitKindOf(const TreeLayout& layout, const KubeletNamer& namer, const CgroupPath& path);
// The libvirt side alone: kNotAUnit outside a machine partition that is a slice.
UnitKind machineUnitKindOf(const TreeLayout& layout, const CgroupPath& path);

// Whether systemd re-applies this kind's values from its properties, so that VRI sets the
// values it writes there through systemd too: slices and machine scopes. Container scopes are
// runc's (the shim keeps containerd, and so runc, up to date); delegated cgroups are libvirt's.
bool systemdKeepsValues(UnitKind kind);

// Whether a unit of this kind inherits its cpuset from its parent under systemd: VRI sets
// none there, so that a pool change narrows one QoS slice or machine.slice instead of every
// Burstable pod or VM scope, and a daemon-reload, which empties it, changes nothing.
bool inheritsCpuset(UnitKind kind);

}  // namespace vri
