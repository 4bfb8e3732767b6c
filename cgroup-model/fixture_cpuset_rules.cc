// The fixture's cpuset rules: v1's nesting, and Linux 6.12's rules for remote `root` partitions, as the
// partitions suite (tests/v2guest/suites/partitions.sh) found them on the real kernel.
#include <cerrno>

#include "base/text.h"
#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/fixture_cgroupfs.h"

namespace vri {

namespace {
constexpr std::string_view kNotExclusive = "root invalid (Cpu list in cpuset.cpus not exclusive)";
constexpr std::string_view kParentNotRoot = "root invalid (Parent is not a partition root)";
}  // namespace

Result<void> FixtureCgroupFs::writeCpuset(const CgroupDir& dir, std::string_view file, std::string_view value) {
  std::string text(value);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  auto set = CpuSet::parse(text);
  if (!set.ok()) return refuse(EINVAL, dir, file, value);
  const CpuSet& online = file == "cpuset.cpus" ? onlineCpus_ : onlineMems_;
  if (!set->isSubsetOf(online)) return refuse(EINVAL, dir, file, value);
  if (dir.path.isRoot()) return refuse(EACCES, dir, file, value);
  if (version_ == CgroupVersion::kV1) {
    // v1: a cpuset stays inside its parent's and around its children's.
    const CgroupDir parent{dir.hierarchy, dir.path.parent()};
    VRI_ASSIGN_OR_RETURN(std::string parent_text, read(parent, file));
    if (!set->isSubsetOf(*CpuSet::parse(parent_text))) return refuse(EACCES, dir, file, value);
    VRI_ASSIGN_OR_RETURN(auto names, children(dir));
    for (const std::string& name : names) {
      VRI_ASSIGN_OR_RETURN(std::string child_text, read({dir.hierarchy, *dir.path.child(name)}, file));
      if (!CpuSet::parse(child_text)->isSubsetOf(*set)) return refuse(EBUSY, dir, file, value);
    }
    VRI_ASSIGN_OR_RETURN(std::string tasks, read(dir, "tasks"));
    if (set->empty() && !tasks.empty()) return refuse(ENOSPC, dir, file, value);
  }
  return store(dir, file, set->format());
}

Result<CpuSet> FixtureCgroupFs::cpusetFile(const CgroupDir& dir, std::string_view file) const {
  VRI_ASSIGN_OR_RETURN(std::string text, read(dir, file));
  return CpuSet::parse(trimmed(text));
}

Result<void> FixtureCgroupFs::writeExclusive(const CgroupDir& dir, std::string_view value) {
  auto cpus = CpuSet::parse(trimmed(value));
  if (!cpus.ok() || dir.path.isRoot()) return refuse(EINVAL, dir, "cpuset.cpus.exclusive", value);
  const CgroupDir parent{dir.hierarchy, dir.path.parent()};
  VRI_ASSIGN_OR_RETURN(auto names, children(parent));
  for (const std::string& name : names) {
    const CgroupDir sibling{dir.hierarchy, *parent.path.child(name)};
    if (sibling.path == dir.path) continue;
    VRI_ASSIGN_OR_RETURN(CpuSet theirs, cpusetFile(sibling, "cpuset.cpus.exclusive"));
    if (theirs.intersects(*cpus)) return refuse(EINVAL, dir, "cpuset.cpus.exclusive", value);
  }
  return store(dir, "cpuset.cpus.exclusive", cpus->format());
}

Result<void> FixtureCgroupFs::writePartition(const CgroupDir& dir, std::string_view value) {
  const std::string_view wanted = trimmed(value);
  if (wanted == kPartitionMember) return store(dir, "cpuset.cpus.partition", std::string(wanted));
  if (wanted != kPartitionRoot || dir.path.isRoot()) return refuse(EINVAL, dir, "cpuset.cpus.partition", value);
  VRI_ASSIGN_OR_RETURN(const CpuSet mine, cpusetFile(dir, "cpuset.cpus.exclusive"));
  std::string_view state = kPartitionRoot;
  for (CgroupPath up = dir.path.parent(); !up.isRoot() && !mine.empty(); up = up.parent()) {
    VRI_ASSIGN_OR_RETURN(const CpuSet theirs, cpusetFile({dir.hierarchy, up}, "cpuset.cpus.exclusive"));
    if (!mine.isSubsetOf(theirs)) state = kParentNotRoot;
  }
  if (mine.empty()) state = kParentNotRoot;
  const CgroupDir parent{dir.hierarchy, dir.path.parent()};
  VRI_ASSIGN_OR_RETURN(auto names, children(parent));
  for (const std::string& name : names) {
    const CgroupDir sibling{dir.hierarchy, *parent.path.child(name)};
    if (sibling.path == dir.path) continue;
    VRI_ASSIGN_OR_RETURN(const CpuSet theirs, cpusetFile(sibling, "cpuset.cpus"));
    if (theirs.intersects(mine) && state == kPartitionRoot) state = kNotExclusive;
  }
  return store(dir, "cpuset.cpus.partition", std::string(state));
}

Result<void> FixtureCgroupFs::invalidatePartitionsBeside(const CgroupDir& dir) {
  if (dir.path.isRoot()) return {};
  VRI_ASSIGN_OR_RETURN(const CpuSet written, cpusetFile(dir, "cpuset.cpus"));
  const CgroupDir parent{dir.hierarchy, dir.path.parent()};
  VRI_ASSIGN_OR_RETURN(auto names, children(parent));
  for (const std::string& name : names) {
    const CgroupDir sibling{dir.hierarchy, *parent.path.child(name)};
    if (sibling.path == dir.path) continue;
    VRI_ASSIGN_OR_RETURN(std::string state, read(sibling, "cpuset.cpus.partition"));
    if (trimmed(state) != kPartitionRoot) continue;
    VRI_ASSIGN_OR_RETURN(const CpuSet theirs, cpusetFile(sibling, "cpuset.cpus.exclusive"));
    if (theirs.intersects(written)) VRI_TRY(store(sibling, "cpuset.cpus.partition", std::string(kNotExclusive)));
  }
  return {};
}

}  // namespace vri
