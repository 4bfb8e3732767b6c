// CgroupApplier: turns a desired tree into the few kernel operations that
// make the cgroupfs match it, in an order the kernel accepts.
//
// The plan is a diff against what the cgroupfs holds now, so applying twice
// does nothing the second time, and a run that failed part way leaves a state
// from which the next run converges. Order:
//   1. create missing cgroups parent-first (v2: delegating controllers from
//      the parent and marking thread groups threaded right after); below an
//      adopted root a missing cgroup is skipped with its subtree instead;
//   2. v2: return to `member` each partition that goes or whose CPUs change;
//   3. widen cpusets (cpus, mems, exclusive CPUs) parent-first (a leaf gets
//      its final value at once);
//   4. write every other value that differs;
//   5. remove cgroups below the managed roots that are not desired, deepest
//      first (the kernel refuses while one still has tasks);
//   6. narrow cpusets child-first (v1: below an adopted root, a child VRI does
//      not know that holds more is narrowed first, as the kernel demands);
//   7. v2: form the `root` partitions that are not (an invalid one is written
//      `member` first: rewriting `root` alone does not repair it).
// A cpuset that only grows or only shrinks is written once.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

struct CgroupSpec {
  CgroupSettings settings;
  // Values someone else writes (kubelet and the runtime write pods' hugetlb limits): drift
  // compares them with the kernel, the applier never writes them.
  CgroupSettings verified;
  bool threaded = false;  // v2: a thread group (vCPU, emulator, iothread)
};

struct DesiredTree {
  // Subtrees whose cgroups VRI creates and removes: what is missing is made,
  // what is not desired is removed.
  std::vector<CgroupPath> managedRoots;
  // Subtrees whose cgroups others create and remove (kubelet, libvirt): VRI
  // only writes values into those that exist, and never removes one.
  std::vector<CgroupPath> adoptedRoots;
  // Every desired cgroup. Each lies within a root, and each one below a root
  // has its parent listed too.
  std::map<CgroupPath, CgroupSpec> cgroups;
};

struct CgroupOp {
  enum class Kind { kMkdir, kWrite, kRmdir };
  Kind kind = Kind::kWrite;
  CgroupDir dir;
  std::string file;
  std::string value;
  std::string describe() const;  // "mkdir cpuset:kubepods", "write 0-3 to cpuset:kubepods/cpuset.cpus"
};

class CgroupApplier {
 public:
  CgroupApplier(CgroupFs& fs, const CgroupBackend& backend) : fs_(fs), backend_(backend) {}

  // The operations apply() would run now, without running them (dry run).
  Result<std::vector<CgroupOp>> plan(const DesiredTree& desired) const;
  // Plans and runs the operations; on failure the error names the operation
  // and the kernel's errno, and the operations before it stay done. An adopted
  // cgroup that its owner removed meanwhile is skipped, with the rest of its
  // operations; the operations returned are those that ran.
  Result<std::vector<CgroupOp>> apply(const DesiredTree& desired);

 private:
  CgroupFs& fs_;
  const CgroupBackend& backend_;
};

}  // namespace vri
