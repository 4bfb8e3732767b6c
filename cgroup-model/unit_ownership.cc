#include "cgroup-model/unit_ownership.h"

namespace vri {

namespace {

bool endsWith(std::string_view text, std::string_view suffix) { return text.ends_with(suffix); }

UnitKind kubeletUnit(const KubeletNamer& namer, const CgroupPath& path) {
  const CgroupPath kubepods = namer.kubepods();
  if (path == kubepods) return UnitKind::kKubepodsSlice;
  if (path.depth() == kubepods.depth() + 1) {
    if (namer.isQosParent(path.leaf())) return UnitKind::kQosSlice;
    return endsWith(path.leaf(), ".slice") ? UnitKind::kGuaranteedPod : UnitKind::kContainerScope;
  }
  // Below a QoS slice: a pod slice, or a container scope of a Guaranteed pod.
  const bool under_qos = path.depth() >= kubepods.depth() + 2 && namer.isQosParent(path.components()[kubepods.depth()]);
  if (under_qos && path.depth() == kubepods.depth() + 2) return UnitKind::kQosPod;
  return UnitKind::kContainerScope;
}

}  // namespace

std::string_view unitKindName(UnitKind kind) {
  switch (kind) {
    case UnitKind::kNotAUnit: return "not a unit";
    case UnitKind::kKubepodsSlice: return "kubepods slice";
    case UnitKind::kQosSlice: return "QoS slice";
    case UnitKind::kGuaranteedPod: return "Guaranteed pod slice";
    case UnitKind::kQosPod: return "Burstable or BestEffort pod slice";
    case UnitKind::kContainerScope: return "container scope";
    case UnitKind::kMachineSlice: return "machine slice";
    case UnitKind::kMachineScope: return "machine scope";
    case UnitKind::kDelegated: return "delegated cgroup";
  }
  return "?";
}

UnitKind unitKindOf(const TreeLayout& layout, const KubeletNamer& namer, const CgroupPath& path) {
  if (layout.driver == KubeletDriver::kSystemd && path.isWithin(namer.kubepods())) return kubeletUnit(namer, path);
  return machineUnitKindOf(layout, path);
}

UnitKind machineUnitKindOf(const TreeLayout& layout, const CgroupPath& path) {
  const CgroupPath& machine = layout.machinePartition;
  if (layout.libvirt == LibvirtLayout::kNoSystemd || machine.isRoot() || !endsWith(machine.leaf(), ".slice") ||
      !path.isWithin(machine))
    return UnitKind::kNotAUnit;
  if (path == machine) return UnitKind::kMachineSlice;
  if (path.depth() == machine.depth() + 1)
    return endsWith(path.leaf(), ".scope") ? UnitKind::kMachineScope : UnitKind::kNotAUnit;
  return UnitKind::kDelegated;
}

bool systemdKeepsValues(UnitKind kind) {
  switch (kind) {
    case UnitKind::kKubepodsSlice:
    case UnitKind::kQosSlice:
    case UnitKind::kGuaranteedPod:
    case UnitKind::kQosPod:
    case UnitKind::kMachineSlice:
    case UnitKind::kMachineScope: return true;
    case UnitKind::kNotAUnit:
    case UnitKind::kContainerScope:
    case UnitKind::kDelegated: return false;
  }
  return false;
}

bool inheritsCpuset(UnitKind kind) { return kind == UnitKind::kQosPod || kind == UnitKind::kMachineScope; }

}  // namespace vri
