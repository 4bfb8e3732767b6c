// How each cgroup version lays CgroupSettings out in control files.
//
//   setting    v1 (hierarchy: file)                         v2 (unified: file)
//   cpus       cpuset: cpuset.cpus                          cpuset.cpus
//   mems       cpuset: cpuset.mems                          cpuset.mems
//   cpusExclusive  (none)                                   cpuset.cpus.exclusive
//   partitionRoot  (none)                                   cpuset.cpus.partition ("root" | "member")
//   shares     cpu: cpu.shares                              cpu.weight (sharesToWeight)
//   cpuMax     cpu: cpu.cfs_period_us, cpu.cfs_quota_us     cpu.max
//   memoryMax  memory: memory.limit_in_bytes                memory.max
//   memoryMin/Low  (none)                                   memory.min, memory.low
//   hugetlbMax hugetlb: hugetlb.<size>.limit_in_bytes       hugetlb.<size>.max
//   pidsMax    pids: pids.max                               pids.max
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/cgroup_settings.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

// kExclusive is a CPU set like kCpus (widened parent-first, narrowed child-first);
// kPartition is written after every cpuset of the tree is in place (cgroup_applier.h).
enum class FileKind { kCpus, kMems, kExclusive, kPartition, kPlain };

// cpuset.cpus.partition's values as VRI writes them; the kernel reads back `root invalid (<reason>)`
// for a root partition it cannot honour.
inline constexpr std::string_view kPartitionRoot = "root";
inline constexpr std::string_view kPartitionMember = "member";

struct ControlFile {
  std::string hierarchy;
  std::string file;
  std::string value;
  FileKind kind = FileKind::kPlain;
};

class CgroupBackend {
 public:
  virtual ~CgroupBackend() = default;
  virtual CgroupVersion version() const = 0;
  // Where a cgroup is looked up (v1: the cpuset hierarchy).
  virtual std::string primaryHierarchy() const = 0;
  // Every hierarchy a cgroup is created in, so that its tasks are placed,
  // limited and accounted everywhere (v1: each configured hierarchy, e.g.
  // cpuacct too; v2: the unified one).
  virtual std::vector<std::string> hierarchies() const = 0;
  // The files that express `settings`, in a valid write order.
  virtual Result<std::vector<ControlFile>> files(const CgroupSettings& settings) const = 0;
  // v2: the controllers a cgroup with these settings needs its parent to delegate.
  virtual std::vector<std::string> controllers(const CgroupSettings& settings) const = 0;

  // What a cgroup holds now: every setting whose file exists and parses.
  // NOT_FOUND when the cgroup does not exist in the primary hierarchy.
  virtual Result<CgroupSettings> readSettings(const CgroupFs& fs, const CgroupPath& path) const = 0;
  // The processes (or, with threads, the thread ids) in a cgroup.
  virtual Result<std::vector<int>> readTasks(const CgroupFs& fs, const CgroupPath& path, bool threads) const = 0;
};

// `hierarchies` maps each v1 controller to the hierarchy (mount directory)
// holding it, e.g. cpu -> "cpu,cpuacct"; cgroups are created in all of them.
// Settings whose controller has no hierarchy are refused.
std::unique_ptr<CgroupBackend> makeV1Backend(std::map<std::string, std::string> hierarchies);
std::unique_ptr<CgroupBackend> makeV2Backend();

// Whether a file already holds a value, comparing what the kernel would
// store: cpusets as sets, v1 memory limits in whole pages, cpu.max parsed.
bool sameControlValue(const ControlFile& desired, std::string_view current);

// A control file's value as drift detection and the applier compare it. On v2 a
// cgroup without the file lacks the controller (systemd enables cpuset in
// machine.slice only once a unit asks for it): that reads as empty, a value the
// applier sets after delegating the controller from above.
Result<std::string> readControlValue(const CgroupFs& fs, const CgroupBackend& backend, const CgroupDir& dir,
                                     const std::string& file);

}  // namespace vri
