// Reading a running node's cgroup tree back into the model, so that vrid can
// take over pods and VMs that already run.
//
// Pods and containers are recognised by kubelet's names (either driver). VMs
// are every scope under the machine partition (either libvirt layout, with or
// without the libvirt/ level, found by looking); a VM is identified by its
// QEMU process — the first process of its emulator group — whose
// /proc/<pid>/cgroup must lead back to the scope, and by the -uuid on that
// process's command line. The scope's name is never parsed for identity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroup-model/cgroup_backend.h"
#include "cgroup-model/node_tree.h"

namespace vri {

struct ScannedCgroup {
  CgroupPath path;
  CgroupSettings settings;  // what the files hold now
  std::vector<int> tasks;   // processes; thread ids for VM thread groups
};

struct ScannedContainer {
  std::string id;
  ScannedCgroup cgroup;
};

struct ScannedPod {
  std::string uid;
  QosClass qos = QosClass::kBestEffort;
  ScannedCgroup cgroup;
  std::vector<ScannedContainer> containers;
};

struct ScannedThreadGroup {
  enum class Kind { kVcpu, kEmulator, kIothread };
  Kind kind = Kind::kVcpu;
  int64_t index = 0;  // vCPU index or iothread id (IothreadId); 0 for the emulator
  ScannedCgroup cgroup;
};

struct ScannedVm {
  ScannedCgroup scope;
  std::optional<int> qemuPid;
  std::string uuid;  // from QEMU's command line; empty when unknown
  std::vector<ScannedThreadGroup> threadGroups;
};

struct NodeScan {
  std::vector<ScannedPod> pods;
  std::vector<ScannedVm> vms;
  // What was found but not understood ("kubepods/strange: not a pod"), for the report.
  std::vector<std::string> notes;
};

// `controller` names the v1 hierarchy whose /proc/<pid>/cgroup line locates
// the QEMU process ("cpuset"); ignored on v2.
Result<NodeScan> scanNode(const CgroupFs& fs, const CgroupBackend& backend, const TreeLayout& layout);

// The UUID given to QEMU with -uuid, from its NUL-separated command line.
std::optional<std::string> qemuUuidFromCmdline(std::string_view cmdline);

}  // namespace vri
