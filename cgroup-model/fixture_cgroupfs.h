// FixtureCgroupFs: a cgroup filesystem kept in an ordinary directory, with the
// kernel's rules, for tests and benchmarks that cannot or should not touch
// the real kernel.
//
// Files live under <directory>/cgroup/<hierarchy>/<path>/ and /proc files
// under <directory>/proc/. Like the kernel it refuses, with the kernel's errno:
// - a v1 child cpuset outside its parent's (EACCES), a parent narrowed below a
//   child's (EBUSY), a task joining a cpuset without CPUs or memory (ENOSPC);
// - removing a cgroup with children or tasks (EBUSY);
// - v2: a process in a domain cgroup that delegates domain controllers, or
//   delegating domain controllers from a cgroup with processes (EBUSY; threaded
//   controllers may be delegated beside processes, which makes the cgroup a
//   thread root); a process in a domain below a thread root, a threaded cgroup
//   under a parent that delegates domain controllers, a domain controller in a
//   threaded subtree (EOPNOTSUPP); a controller its parent does not offer (ENOENT);
// - malformed values and values out of range (EINVAL, ERANGE);
// - writes to files that do not exist (ENOENT).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/cpuset.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

struct FixtureHierarchy {
  std::string name;                      // "cpuset", "cpu,cpuacct"; "" for v2
  std::vector<std::string> controllers;  // those mounted there (v2: those the root offers)
};

class FixtureCgroupFs : public CgroupFs {
 public:
  // `directory` must be absolute and empty or absent.
  static Result<FixtureCgroupFs> create(std::string directory, CgroupVersion version,
                                        std::vector<FixtureHierarchy> hierarchies, CpuSet onlineCpus,
                                        CpuSet onlineMems);
  // The usual layouts: v1 with cpuset, cpu,cpuacct (co-mounted), memory,
  // hugetlb and pids; v2 with cpuset cpu memory hugetlb pids.
  static Result<FixtureCgroupFs> createV1(std::string directory, CpuSet onlineCpus, CpuSet onlineMems);
  static Result<FixtureCgroupFs> createV2(std::string directory, CpuSet onlineCpus, CpuSet onlineMems);

  Result<std::string> read(const CgroupDir& dir, std::string_view file) const override;
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override;
  Result<void> mkdir(const CgroupDir& dir) override;
  Result<void> rmdir(const CgroupDir& dir) override;
  bool exists(const CgroupDir& dir) const override;
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override;
  Result<std::string> readProc(std::string_view relative) const override;

  // v2: cgroups made from now on have cpuset.cpus.exclusive and cpuset.cpus.partition, with
  // Linux 6.12's rules for remote `root` partitions (fixture_cpuset_rules.cc): exclusive CPUs a sibling
  // holds exclusively are refused (EINVAL); a root partition is valid only when its exclusive CPUs lie
  // in every ancestor's below the root and in no sibling's cpuset.cpus (else `root invalid (<reason>)`),
  // and a sibling's cpuset.cpus write over its CPUs invalidates it until written member, then root.
  void emulateCpusetPartitions() { partitions_ = true; }

  // What the kernel counts and no process may write: cpu.stat, cpuacct.usage, memory.usage_in_bytes,
  // memory.current (the usage sampler's files), set to `value` as if tasks had used that much.
  Result<void> setCounter(const CgroupDir& dir, std::string_view file, std::string_view value);
  // Puts a file below the fixture's proc root (e.g. "1234/cgroup").
  Result<void> setProcFile(std::string_view relative, std::string_view content);

  // Successful operations so far.
  int writes() const { return writes_; }
  int mkdirs() const { return mkdirs_; }
  int rmdirs() const { return rmdirs_; }

  CgroupVersion version() const { return version_; }
  const std::vector<FixtureHierarchy>& hierarchies() const { return hierarchies_; }

 private:
  FixtureCgroupFs(std::string directory, CgroupVersion version, std::vector<FixtureHierarchy> hierarchies,
                  CpuSet onlineCpus, CpuSet onlineMems)
      : directory_(std::move(directory)),
        version_(version),
        hierarchies_(std::move(hierarchies)),
        onlineCpus_(std::move(onlineCpus)),
        onlineMems_(std::move(onlineMems)) {}

  std::string dirPath(const CgroupDir& dir) const;
  std::string filePath(const CgroupDir& dir, std::string_view file) const;
  const FixtureHierarchy* hierarchy(std::string_view name) const;
  bool hasController(const CgroupDir& dir, std::string_view controller) const;
  // The controllers whose files a v2 cgroup has: its parent's subtree_control.
  std::vector<std::string> v2Controllers(const CgroupDir& dir) const;

  Result<void> createControllerFiles(const CgroupDir& dir, const std::vector<std::string>& controllers, bool isRoot);
  Result<void> writeCpuset(const CgroupDir& dir, std::string_view file, std::string_view value);
  Result<void> writeProcess(const CgroupDir& dir, std::string_view file, std::string_view value);
  Result<void> writeSubtreeControl(const CgroupDir& dir, std::string_view value);
  // cpuset partitions (fixture_cpuset_rules.cc, with writeCpuset).
  Result<void> writeExclusive(const CgroupDir& dir, std::string_view value);
  Result<void> writePartition(const CgroupDir& dir, std::string_view value);
  Result<void> invalidatePartitionsBeside(const CgroupDir& dir);
  Result<CpuSet> cpusetFile(const CgroupDir& dir, std::string_view file) const;
  // Puts `value` in an existing control file, as the kernel shows it.
  Result<void> store(const CgroupDir& dir, std::string_view file, std::string_view value);
  // The v2 kernel's rules for threaded subtrees (fixture_v2_rules.cc).
  Result<std::vector<std::string>> delegatedControllers(const CgroupDir& dir) const;
  Result<bool> delegatesDomainControllers(const CgroupDir& dir) const;
  Result<bool> isThreadRoot(const CgroupDir& dir) const;
  Result<bool> isValidDomain(const CgroupDir& dir) const;
  // Whether `pid` is somewhere in the threaded domain (the thread root's subtree) that holds `dir`.
  Result<bool> inThreadedDomainOf(const CgroupDir& dir, const std::string& pid) const;
  Result<std::string> checkedValue(std::string_view file, std::string_view value, const CgroupDir& dir) const;
  Error refuse(int err, const CgroupDir& dir, std::string_view file, std::string_view value) const;

  std::string directory_;
  CgroupVersion version_;
  std::vector<FixtureHierarchy> hierarchies_;
  CpuSet onlineCpus_;
  CpuSet onlineMems_;
  int writes_ = 0, mkdirs_ = 0, rmdirs_ = 0;
  bool partitions_ = false;
};

}  // namespace vri
