#include "systemd/systemd_cgroupfs.h"

#include "cgroup-model/unit_ownership.h"

namespace vri {

SystemdCgroupFs::SystemdCgroupFs(CgroupFs& kernel, SystemdUnits& units, const TreeLayout& layout)
    : kernel_(kernel), units_(units), layout_(layout), namer_(makeKubeletNamer(layout.driver, layout.kubeletParent)) {}

Result<void> SystemdCgroupFs::write(const CgroupDir& dir, std::string_view file, std::string_view value) {
  // cgroup.* (controllers, thread mode, processes) are the kernel's own interface: systemd
  // enables the controllers a unit's properties need by itself.
  const bool control_value = !file.starts_with("cgroup.");
  if (dir.hierarchy.empty() && control_value && systemdKeepsValues(unitKindOf(layout_, *namer_, dir.path))) {
    VRI_ASSIGN_OR_RETURN(std::vector<UnitProperty> properties,
                         unitPropertiesFor(file, value).context(dir.describe() + "/" + std::string(file)));
    if (!properties.empty()) {
      unitCalls_.fetch_add(1, std::memory_order_relaxed);
      VRI_TRY(units_.setProperties(dir.path.leaf(), properties));
    }
  }
  return kernel_.write(dir, file, value);
}

Result<bool> SystemdCgroupFs::keep(const CgroupPath& path, const std::vector<ControlFile>& files) {
  if (!systemdKeepsValues(unitKindOf(layout_, *namer_, path))) return false;
  std::vector<UnitProperty> properties;
  for (const ControlFile& file : files) {
    if (!file.hierarchy.empty()) continue;
    VRI_ASSIGN_OR_RETURN(std::vector<UnitProperty> more,
                         unitPropertiesFor(file.file, file.value).context(path.str() + "/" + file.file));
    properties.insert(properties.end(), more.begin(), more.end());
  }
  if (properties.empty()) return true;
  unitCalls_.fetch_add(1, std::memory_order_relaxed);
  VRI_TRY(units_.setProperties(path.leaf(), properties));
  return true;
}

}  // namespace vri
