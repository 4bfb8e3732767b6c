// Writes a set of known cpuset changes in an order the kernel accepts,
// without reading what the cgroups hold: the caller knows each value before
// and after (its previous decision wrote it). v1 refuses a child cpuset
// outside its parent's and a parent narrowed below a child's, so:
//   1. parent-first: leaves get their final value, parents that gain CPUs
//      are widened to before|after;
//   2. the caller's other values;
//   3. child-first: parents are narrowed to their final value. On v1, when
//      the kernel refuses (EBUSY: a child holds CPUs outside the new value),
//      the children the caller does not know (a pod's sandbox, a container
//      not yet named) are narrowed and the parent written again: no cost
//      unless such a child exists.
// v2 has no such rule (effective cpusets follow the parent), so the same
// order is merely safe there. A cgroup that does not exist (ENOENT) is
// skipped: adopted cgroups come and go with their owners; reconcile sees them.
#pragma once

#include <string>
#include <vector>

#include "base/cpuset.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

// Pointers to values the caller keeps alive through apply(): most cgroups
// share a handful of values and paths that are cached from one decision to the next.
struct CpusetChange {
  const CgroupDir* dir = nullptr;
  const char* file = "cpuset.cpus";  // or "cpuset.mems"
  const CpuSet* before = nullptr;
  const CpuSet* after = nullptr;
  bool leaf = false;  // nothing that matters lives below (a container, a thread group)
};

struct PlainWrite {
  CgroupDir dir;
  std::string file;
  std::string value;
};

struct DeltaWriteReport {
  int writes = 0;   // successful writes
  int skipped = 0;  // cgroups that did not exist
};

class CpusetDeltaWriter {
 public:
  CpusetDeltaWriter(CgroupFs& fs, CgroupVersion version) : fs_(fs), version_(version) {}
  // `changes` in tree pre-order: every parent before its children.
  Result<DeltaWriteReport> apply(const std::vector<CpusetChange>& changes, const std::vector<PlainWrite>& plain);

 private:
  Result<void> write(const CgroupDir& dir, std::string_view file, const CpuSet& value, DeltaWriteReport& report);
  Result<void> narrowUnknownChildren(const CgroupDir& dir, std::string_view file, const CpuSet& limit,
                                     DeltaWriteReport& report);
  const std::string& format(const CpuSet& cpus);

  CgroupFs& fs_;
  CgroupVersion version_;
  std::vector<std::pair<CpuSet, std::string>> formatted_;  // most writes share a handful of values
};

}  // namespace vri
