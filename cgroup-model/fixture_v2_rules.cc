// FixtureCgroupFs: the v2 kernel's rules for threaded subtrees, as the guest's
// real v2 kernel answers them (tests/v2guest/real_kernel_v2_test.cc compares).
// Threaded controllers (cpuset, cpu, pids, perf_event) may be delegated from a
// cgroup that holds processes; that cgroup is then a thread root, and domain
// cgroups below it cannot take processes.
#include <sstream>

#include "cgroup-model/fixture_cgroupfs.h"

namespace vri {

namespace {

bool isThreadedController(std::string_view controller) {
  return controller == "cpuset" || controller == "cpu" || controller == "pids" || controller == "perf_event";
}

}  // namespace

Result<std::vector<std::string>> FixtureCgroupFs::delegatedControllers(const CgroupDir& dir) const {
  VRI_ASSIGN_OR_RETURN(const std::string text, read(dir, "cgroup.subtree_control"));
  std::istringstream words(text);
  std::vector<std::string> out;
  for (std::string word; words >> word;) out.push_back(word);
  return out;
}

Result<bool> FixtureCgroupFs::delegatesDomainControllers(const CgroupDir& dir) const {
  VRI_ASSIGN_OR_RETURN(const auto delegated, delegatedControllers(dir));
  for (const std::string& controller : delegated) {
    if (!isThreadedController(controller)) return true;
  }
  return false;
}

Result<bool> FixtureCgroupFs::isThreadRoot(const CgroupDir& dir) const {
  if (dir.path.isRoot()) return false;
  VRI_ASSIGN_OR_RETURN(const std::string type, read(dir, "cgroup.type"));
  if (type == "domain threaded") return true;
  VRI_ASSIGN_OR_RETURN(const std::string procs, read(dir, "cgroup.procs"));
  if (procs.empty()) return false;
  VRI_ASSIGN_OR_RETURN(const auto delegated, delegatedControllers(dir));
  for (const std::string& controller : delegated) {
    if (isThreadedController(controller)) return true;
  }
  return false;
}

Result<bool> FixtureCgroupFs::isValidDomain(const CgroupDir& dir) const {
  if (dir.path.isRoot()) return true;
  VRI_ASSIGN_OR_RETURN(const std::string type, read(dir, "cgroup.type"));
  if (type == "threaded") return false;
  for (CgroupPath up = dir.path.parent(); !up.isRoot(); up = up.parent()) {
    const CgroupDir ancestor{dir.hierarchy, up};
    VRI_ASSIGN_OR_RETURN(const std::string ancestor_type, read(ancestor, "cgroup.type"));
    if (ancestor_type == "threaded") return false;
    VRI_ASSIGN_OR_RETURN(const bool thread_root, isThreadRoot(ancestor));
    if (thread_root) return false;
  }
  return true;
}

Result<bool> FixtureCgroupFs::inThreadedDomainOf(const CgroupDir& dir, const std::string& pid) const {
  CgroupPath domain = dir.path;
  while (!domain.isRoot()) {
    VRI_ASSIGN_OR_RETURN(const std::string type, read({dir.hierarchy, domain}, "cgroup.type"));
    if (type != "threaded") break;
    domain = domain.parent();
  }
  std::vector<CgroupPath> pending = {domain};
  while (!pending.empty()) {
    const CgroupDir at{dir.hierarchy, pending.back()};
    pending.pop_back();
    for (const char* list : {"cgroup.procs", "cgroup.threads"}) {
      VRI_ASSIGN_OR_RETURN(const std::string members, read(at, list));
      std::istringstream lines(members);
      for (std::string line; std::getline(lines, line);) {
        if (line == pid) return true;
      }
    }
    VRI_ASSIGN_OR_RETURN(const auto names, children(at));
    for (const std::string& name : names) pending.push_back(*at.path.child(name));
  }
  return false;
}

}  // namespace vri
