#include "cgroup-model/partition_probe.h"

#include <cerrno>
#include <optional>
#include <sstream>

#include "base/text.h"

namespace vri {

namespace {

PartitionProbe no(std::string reason) { return {false, std::move(reason)}; }

bool delegates(const CgroupFs& fs, const CgroupDir& dir, std::string_view controller) {
  auto text = fs.read(dir, "cgroup.subtree_control");
  if (!text.ok()) return false;
  std::istringstream words(*text);
  for (std::string word; words >> word;) {
    if (word == controller) return true;
  }
  return false;
}

// Undoes whatever part of the probe exists (also one a crashed vrid left), deepest first.
Result<void> removeProbe(CgroupFs& fs, const CgroupDir& outer, const CgroupDir& inner) {
  if (fs.exists(inner)) {
    (void)fs.write(inner, "cpuset.cpus.partition", kPartitionMember);
    VRI_TRY(fs.rmdir(inner).context("remove the partition probe"));
  }
  if (fs.exists(outer)) {
    (void)fs.write(outer, "cpuset.cpus.exclusive", "");
    VRI_TRY(fs.rmdir(outer).context("remove the partition probe"));
  }
  return {};
}

// Forms the partition on `cpu`; the probe's cgroups exist.
PartitionProbe formPartition(CgroupFs& fs, const CgroupDir& outer, const CgroupDir& inner, int cpu) {
  const std::string value = CpuSet{cpu}.format();
  if (auto done = fs.write(outer, "cgroup.subtree_control", "+cpuset"); !done.ok())
    return no("the probe cgroup cannot delegate cpuset: " + done.error().message());
  if (auto done = fs.write(outer, "cpuset.cpus.exclusive", value); !done.ok()) {
    if (done.error().sysErrno() == ENOENT) return no("the kernel has no cpuset.cpus.exclusive (Linux before 6.7)");
    return no("cpuset.cpus.exclusive refused: " + done.error().message());
  }
  // 6.7 to 6.10 want cpuset.cpus.exclusive within cpuset.cpus.
  for (const char* file : {"cpuset.cpus", "cpuset.cpus.exclusive"}) {
    if (auto done = fs.write(inner, file, value); !done.ok())
      return no(std::string(file) + " refused: " + done.error().message());
  }
  if (auto done = fs.write(inner, "cpuset.cpus.partition", kPartitionRoot); !done.ok())
    return no("a remote root partition is refused (Linux before 6.7): " + done.error().message());
  auto state = fs.read(inner, "cpuset.cpus.partition");
  if (!state.ok()) return no("cpuset.cpus.partition unreadable: " + state.error().message());
  if (trimmed(*state) != kPartitionRoot) return no("the kernel reads the probe partition as " + std::string(*state));
  const auto effectiveOf = [&](const CgroupDir& dir) -> std::optional<CpuSet> {
    auto text = fs.read(dir, "cpuset.cpus.effective");
    if (!text.ok()) return std::nullopt;
    auto cpus = CpuSet::parse(*text);
    if (!cpus.ok()) return std::nullopt;
    return *cpus;
  };
  if (effectiveOf(inner) != CpuSet{cpu})
    return no("the probe partition does not hold CPU " + std::to_string(cpu) + " alone");
  const auto root = effectiveOf({"", CgroupPath()});
  if (!root || root->contains(cpu))
    return no("CPU " + std::to_string(cpu) + " stays in the cgroup root's effective CPUs beside the partition");
  return {true, "a remote root partition on CPU " + std::to_string(cpu) + " took it from every other cgroup"};
}

// The probe itself, on a root that delegates cpuset: on a free shared CPU, undone whatever it finds.
Result<PartitionProbe> formProbe(CgroupFs& fs, const CpuSet& sharedCpus) {
  const CgroupDir root{"", CgroupPath()};
  // Not a CPU another cgroup below the root holds for its partitions (kubepods, from a vrid before this
  // one): the kernel refuses exclusive CPUs a sibling holds.
  CpuSet held;
  if (auto names = fs.children(root); names.ok()) {
    for (const std::string& name : *names) {
      auto child = CgroupPath::parse(name);
      if (!child.ok() || name == kPartitionProbeCgroup) continue;
      auto text = fs.read({"", *child}, "cpuset.cpus.exclusive");
      if (!text.ok()) continue;
      if (auto cpus = CpuSet::parse(trimmed(*text)); cpus.ok()) held |= *cpus;
    }
  }
  const CpuSet free = sharedCpus - held;
  if (free.empty()) return no("every shared CPU is held for partitions already");
  VRI_ASSIGN_OR_RETURN(CgroupPath outer_path, CgroupPath::parse(std::string(kPartitionProbeCgroup)));
  VRI_ASSIGN_OR_RETURN(CgroupPath inner_path, outer_path.child("cpus"));
  const CgroupDir outer{"", outer_path}, inner{"", inner_path};
  VRI_TRY(removeProbe(fs, outer, inner));
  VRI_TRY(fs.mkdir(outer).context("make the partition probe"));
  PartitionProbe found = no("");
  if (auto made = fs.mkdir(inner); made.ok()) {
    found = formPartition(fs, outer, inner, free.last());
  } else {
    found = no("the probe cgroup cannot have a child: " + made.error().message());
  }
  VRI_TRY(removeProbe(fs, outer, inner));
  return found;
}

}  // namespace

Result<PartitionProbe> probeCpusetPartitions(CgroupFs& fs, const CgroupBackend& backend, const KubeletNamer& namer,
                                             const CpuSet& sharedCpus) {
  if (backend.version() != CgroupVersion::kV2) return no("cgroup v1 has no cpuset partitions");
  if (namer.kubepods().depth() != 1)
    return no("kubepods (" + namer.kubepods().str() +
              ") is not directly below the cgroup root: a remote partition needs cpuset.cpus.exclusive on every "
              "ancestor, and VRI writes none outside its tree");
  if (sharedCpus.count() < 2) return no("the shared pool has fewer than 2 CPUs to borrow one from");
  // A node where no unit has asked for cpuset yet (a fresh boot: systemd enables it at the root only for
  // a unit with AllowedCPUs) delegates none: enabled here, as vrid's own cpusets for kubepods would
  // need it anyway (systemd keeps it once VRI gives the units theirs), and disabled again when the probe
  // finds partitions unusable.
  const CgroupDir root{"", CgroupPath()};
  const bool enable_cpuset = !delegates(fs, root, "cpuset");
  if (enable_cpuset) {
    if (auto enabled = fs.write(root, "cgroup.subtree_control", "+cpuset"); !enabled.ok())
      return no("the cgroup root does not delegate the cpuset controller, and enabling it failed: " +
                enabled.error().message());
  }
  Result<PartitionProbe> found = formProbe(fs, sharedCpus);
  if (enable_cpuset && found.ok() && found->usable) found->reason += "; cpuset enabled at the cgroup root";
  if (enable_cpuset && (!found.ok() || !found->usable)) (void)fs.write(root, "cgroup.subtree_control", "-cpuset");
  return found;
}

}  // namespace vri
