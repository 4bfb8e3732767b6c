// Which cgroup hierarchies a host has, read from /proc/self/mountinfo.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

enum class CgroupVersion { kV1, kV2 };
std::string_view cgroupVersionName(CgroupVersion version);
Result<CgroupVersion> parseCgroupVersion(std::string_view text);  // "v1" | "v2"

struct CgroupMounts {
  // v1: controller (or "name=systemd") -> mount point. Co-mounted controllers
  // ("cpu,cpuacct") share one mount point.
  std::map<std::string, std::string> v1;
  // The cgroup2 mount point, empty when there is none.
  std::string unified;

  bool hybrid() const { return !v1.empty() && !unified.empty(); }
};

// Parses mountinfo text (mount points unescaped: "\040" is a space).
Result<CgroupMounts> parseMountInfo(std::string_view text);
Result<CgroupMounts> readCgroupMounts(const CgroupFs& fs);  // from "self/mountinfo"

// The hierarchy name (the mount point below `cgroupRoot`) of a v1 controller.
Result<std::string> v1Hierarchy(const CgroupMounts& mounts, std::string_view controller, std::string_view cgroupRoot);

// v2 when the host mounts only cgroup2, or when the unified hierarchy offers
// the cpu and cpuset controllers (read from its cgroup.controllers) and no v1
// hierarchy holds them; otherwise v1. An override wins but must be possible.
Result<CgroupVersion> chooseCgroupVersion(const CgroupMounts& mounts, std::string_view unifiedControllers,
                                          std::optional<CgroupVersion> override);

}  // namespace vri
