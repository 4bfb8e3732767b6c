// SystemdCgroupFs: the cgroupfs as VRI writes it on a node where systemd owns
// the units (unit_ownership.h). Every value written into a unit whose values
// systemd keeps is first set as that unit's property through SystemdUnits,
// then written to the file as before. So the applier and the pool's fast path
// stay the one writer, in one order, with one undo: a refused or unanswered
// D-Bus call is a failed write, and the decision is undone like after any
// other. Reads, directories and every other file pass through untouched.
#pragma once

#include <atomic>
#include <memory>

#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/cgroupfs.h"
#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/node_tree.h"
#include "systemd/systemd_units.h"

namespace vri {

class SystemdCgroupFs : public CgroupFs {
 public:
  // `layout` names kubelet's and libvirt's units; only the v2 hierarchy ("") is handled,
  // since systemd writes no cpuset on v1.
  SystemdCgroupFs(CgroupFs& kernel, SystemdUnits& units, const TreeLayout& layout);

  Result<std::string> read(const CgroupDir& dir, std::string_view file) const override {
    return kernel_.read(dir, file);
  }
  Result<void> write(const CgroupDir& dir, std::string_view file, std::string_view value) override;
  Result<void> mkdir(const CgroupDir& dir) override { return kernel_.mkdir(dir); }
  Result<void> rmdir(const CgroupDir& dir) override { return kernel_.rmdir(dir); }
  bool exists(const CgroupDir& dir) const override { return kernel_.exists(dir); }
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override { return kernel_.children(dir); }
  Result<std::string> readProc(std::string_view relative) const override { return kernel_.readProc(relative); }

  // Sets `files` (hierarchy, name, value) as one call's properties of the unit at `path`, without
  // writing a file: for values the files already hold but systemd may not (vrid's first start
  // under systemd, or on a node whose units were made before). Returns whether it was a unit
  // systemd keeps.
  Result<bool> keep(const CgroupPath& path, const std::vector<ControlFile>& files);

  // How many SetUnitProperties calls were made (logs and benchmarks).
  uint64_t unitCalls() const { return unitCalls_.load(std::memory_order_relaxed); }

 private:
  CgroupFs& kernel_;
  SystemdUnits& units_;
  TreeLayout layout_;
  std::unique_ptr<KubeletNamer> namer_;
  std::atomic<uint64_t> unitCalls_{0};
};

}  // namespace vri
