#include "cgroup-model/cgroup_mounts.h"

#include <array>
#include <sstream>

#include "base/enum_text.h"
#include "base/quote.h"
#include "base/text.h"

namespace vri {

namespace {

constexpr std::array<std::string_view, 15> kV1Controllers = {"cpuset",  "cpu",     "cpuacct", "blkio",      "memory",
                                                             "devices", "freezer", "net_cls", "perf_event", "net_prio",
                                                             "hugetlb", "pids",    "rdma",    "misc",       "io"};

bool isV1Controller(std::string_view option) {
  for (std::string_view controller : kV1Controllers) {
    if (option == controller) return true;
  }
  return option.starts_with("name=");
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeOctal(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      const std::string_view digits = text.substr(i + 1, 3);
      if (digits.size() == 3 && digits.find_first_not_of("01234567") == std::string_view::npos) {
        out += static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace

constexpr EnumText<CgroupVersion, 2> kCgroupVersionText{"cgroup version",
                                                        {{{CgroupVersion::kV1, "v1"}, {CgroupVersion::kV2, "v2"}}}};

std::string_view cgroupVersionName(CgroupVersion version) { return kCgroupVersionText.name(version); }
Result<CgroupVersion> parseCgroupVersion(std::string_view text) { return kCgroupVersionText.parse(text); }

Result<CgroupMounts> parseMountInfo(std::string_view text) {
  CgroupMounts mounts;
  size_t line_number = 0;
  for (std::string_view line : splitOn(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    for (std::string_view field : splitOn(line, ' ')) {
      if (!field.empty()) fields.push_back(field);
    }
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    // After the separator: the file system type, the source and the super options (read below).
    if (dash < 5 || dash + 4 > fields.size()) {
      return Error::invalidArgument("mountinfo line " + std::to_string(line_number) +
                                    " is malformed: " + quoteForMessage(line));
    }
    const std::string_view fstype = fields[dash + 1];
    const std::string mount_point = unescapeOctal(fields[4]);
    // The kernel writes absolute paths; anything else would be taken relative to vrid's working directory.
    if (!mount_point.starts_with('/') || mount_point.find('\0') != std::string::npos) {
      return Error::invalidArgument("mountinfo line " + std::to_string(line_number) + ": the mount point " +
                                    quoteForMessage(mount_point) + " is not an absolute path");
    }
    if (fstype == "cgroup2") {
      if (mounts.unified.empty()) mounts.unified = mount_point;
    } else if (fstype == "cgroup") {
      for (std::string_view option : splitOn(fields[dash + 3], ',')) {
        if (isV1Controller(option) && !mounts.v1.count(std::string(option))) {
          mounts.v1[std::string(option)] = mount_point;
        }
      }
    }
  }
  return mounts;
}

Result<CgroupMounts> readCgroupMounts(const CgroupFs& fs) {
  VRI_ASSIGN_OR_RETURN(std::string text, fs.readProc("self/mountinfo"));
  return parseMountInfo(text);
}

Result<std::string> v1Hierarchy(const CgroupMounts& mounts, std::string_view controller, std::string_view cgroupRoot) {
  const auto it = mounts.v1.find(std::string(controller));
  if (it == mounts.v1.end()) {
    return Error::notFound("no cgroup v1 hierarchy has the " + std::string(controller) + " controller");
  }
  std::string root(cgroupRoot);
  while (root.size() > 1 && root.ends_with('/')) root.pop_back();
  const std::string& mount = it->second;
  if (!mount.starts_with(root + "/") || mount.find('/', root.size() + 1) != std::string::npos) {
    return Error::failedPrecondition("the " + std::string(controller) + " hierarchy is mounted on " + mount +
                                     ", not directly below the cgroup root " + root);
  }
  return mount.substr(root.size() + 1);
}

Result<CgroupVersion> chooseCgroupVersion(const CgroupMounts& mounts, std::string_view unifiedControllers,
                                          std::optional<CgroupVersion> override) {
  std::istringstream words{std::string(unifiedControllers)};
  bool v2_cpu = false, v2_cpuset = false;
  for (std::string word; words >> word;) {
    v2_cpu |= word == "cpu";
    v2_cpuset |= word == "cpuset";
  }
  const bool v2_usable = !mounts.unified.empty() && v2_cpu && v2_cpuset;
  const bool v1_usable = mounts.v1.count("cpuset") && mounts.v1.count("cpu");
  if (override) {
    if (*override == CgroupVersion::kV2 && !v2_usable) {
      return Error::failedPrecondition(
          "cgroup v2 was asked for, but the unified hierarchy " +
          (mounts.unified.empty() ? std::string("is not mounted") : "offers no cpu and cpuset controllers"));
    }
    if (*override == CgroupVersion::kV1 && !v1_usable) {
      return Error::failedPrecondition(
          "cgroup v1 was asked for, but no v1 hierarchy has the cpuset and cpu controllers");
    }
    return *override;
  }
  if (v2_usable && !v1_usable) return CgroupVersion::kV2;
  if (v1_usable) return CgroupVersion::kV1;
  return Error::failedPrecondition("neither cgroup version offers the cpuset and cpu controllers");
}

}  // namespace vri
