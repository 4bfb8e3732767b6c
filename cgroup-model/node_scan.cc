#include "cgroup-model/node_scan.h"

#include <algorithm>
#include <cerrno>
#include <limits>

#include "cgroup-model/iothread_id.h"

#include "base/quote.h"
#include "base/uuid.h"

namespace vri {

namespace {

std::optional<ScannedThreadGroup> threadGroupKind(const std::string& name) {
  // vCPU indexes have at most 6 digits (no VM has a million vCPUs); iothread ids are libvirt's
  // unsigned ints.
  const auto numbered = [&](std::string_view prefix, size_t digits, int64_t most) -> std::optional<int64_t> {
    if (name.size() <= prefix.size() || !name.starts_with(prefix)) return std::nullopt;
    if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos ||
        name.size() - prefix.size() > digits) {
      return std::nullopt;
    }
    const int64_t value = std::stoll(name.substr(prefix.size()));
    if (value > most) return std::nullopt;
    return value;
  };
  ScannedThreadGroup group;
  if (name == "emulator") {
    group.kind = ScannedThreadGroup::Kind::kEmulator;
  } else if (auto n = numbered("vcpu", 6, 999999)) {
    group.kind = ScannedThreadGroup::Kind::kVcpu;
    group.index = *n;
  } else if (auto n = numbered("iothread", 10, std::numeric_limits<IothreadId>::max())) {
    group.kind = ScannedThreadGroup::Kind::kIothread;
    group.index = *n;
  } else {
    return std::nullopt;
  }
  return group;
}

class Scanner {
 public:
  Scanner(const CgroupFs& fs, const CgroupBackend& backend, const TreeLayout& layout)
      : fs_(fs), backend_(backend), layout_(layout), hierarchy_(backend.primaryHierarchy()) {}

  Result<NodeScan> run() {
    VRI_TRY(scanPods());
    VRI_TRY(scanVms());
    return std::move(scan_);
  }

 private:
  Result<ScannedCgroup> read(const CgroupPath& path, bool threads) const {
    ScannedCgroup cgroup{path, {}, {}};
    VRI_ASSIGN_OR_RETURN(cgroup.settings, backend_.readSettings(fs_, path));
    VRI_ASSIGN_OR_RETURN(cgroup.tasks, backend_.readTasks(fs_, path, threads));
    return cgroup;
  }

  Result<std::vector<std::string>> children(const CgroupPath& path) const { return fs_.children({hierarchy_, path}); }

  // A cgroup listed a moment ago and gone now (a pod or a VM stopping while vrid starts): noted, not an error.
  // A read of `path` that found it gone since its parent was listed (a pod or VM that ended meanwhile):
  // noted, and nullopt; any other error stays one.
  template <typename T>
  Result<std::optional<T>> unlessGone(Result<T> read, const CgroupPath& path) {
    if (read.ok()) return std::optional<T>(std::move(read).value());
    if (read.error().code() != ErrorCode::kNotFound && read.error().sysErrno() != ENOENT) return read.error();
    scan_.notes.push_back(path.str() + ": gone during the scan");
    return std::optional<T>();
  }

  Result<void> scanPods() {
    const auto namer = makeKubeletNamer(layout_.driver, layout_.kubeletParent);
    for (QosClass qos : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
      const CgroupPath parent = namer->qos(qos);
      if (!fs_.exists({hierarchy_, parent})) continue;
      VRI_ASSIGN_OR_RETURN(auto names, children(parent));
      for (const std::string& name : names) {
        if (qos == QosClass::kGuaranteed && namer->isQosParent(name)) continue;
        const CgroupPath path = *parent.child(name);
        const auto uid = namer->podUidOf(qos, name);
        if (!uid) {
          scan_.notes.push_back(path.str() + ": not a pod");
          continue;
        }
        ScannedPod pod;
        pod.uid = *uid;
        pod.qos = qos;
        VRI_ASSIGN_OR_RETURN(auto pod_cgroup, unlessGone(read(path, false), path));
        if (!pod_cgroup) continue;
        VRI_ASSIGN_OR_RETURN(auto containers, unlessGone(children(path), path));
        if (!containers) continue;
        pod.cgroup = std::move(*pod_cgroup);
        for (const std::string& child : *containers) {
          const CgroupPath container_path = *path.child(child);
          const auto id = namer->containerIdOf(child);
          if (!id) {
            scan_.notes.push_back(container_path.str() + ": not a container");
            continue;
          }
          VRI_ASSIGN_OR_RETURN(auto cgroup, unlessGone(read(container_path, false), container_path));
          if (cgroup) pod.containers.push_back({*id, std::move(*cgroup)});
        }
        scan_.pods.push_back(std::move(pod));
      }
    }
    return {};
  }

  // The QEMU process: the first process of the emulator group, else of the scope.
  std::optional<int> qemuPid(const CgroupPath& scope, const CgroupPath& threads) const {
    for (const CgroupPath& candidate : {*threads.child("emulator"), threads, scope}) {
      if (!fs_.exists({hierarchy_, candidate})) continue;
      auto procs = backend_.readTasks(fs_, candidate, false);
      if (procs.ok() && !procs->empty()) return procs->front();
    }
    return std::nullopt;
  }

  Result<void> scanVms() {
    const CgroupPath& partition = layout_.machinePartition;
    if (!fs_.exists({hierarchy_, partition})) return {};
    VRI_ASSIGN_OR_RETURN(auto names, children(partition));
    for (const std::string& name : names) {
      const CgroupPath scope = *partition.child(name);
      const CgroupPath with_level = *scope.child("libvirt");
      const CgroupPath threads = fs_.exists({hierarchy_, with_level}) ? with_level : scope;
      ScannedVm vm;
      VRI_ASSIGN_OR_RETURN(auto scope_cgroup, unlessGone(read(scope, false), scope));
      if (!scope_cgroup) continue;
      VRI_ASSIGN_OR_RETURN(auto groups, unlessGone(children(threads), scope));
      if (!groups) continue;
      vm.scope = std::move(*scope_cgroup);
      for (const std::string& group_name : *groups) {
        auto group = threadGroupKind(group_name);
        if (!group) continue;
        VRI_ASSIGN_OR_RETURN(auto cgroup,
                             unlessGone(read(*threads.child(group_name), true), *threads.child(group_name)));
        if (!cgroup) continue;
        group->cgroup = std::move(*cgroup);
        vm.threadGroups.push_back(std::move(*group));
      }
      vm.qemuPid = qemuPid(scope, threads);
      if (!vm.qemuPid) {
        scan_.notes.push_back(scope.str() + ": no QEMU process");
        if (vm.threadGroups.empty()) continue;
      } else {
        const std::string pid = std::to_string(*vm.qemuPid);
        auto cgroups = fs_.readProc(pid + "/cgroup");
        const std::string controller = backend_.version() == CgroupVersion::kV1 ? "cpuset" : "";
        auto found =
            cgroups.ok() ? vmScopeFromProcCgroup(*cgroups, controller, partition) : Result<CgroupPath>(cgroups.error());
        if (!found.ok() || *found != scope) {
          scan_.notes.push_back(scope.str() + ": process " + pid + " does not lead back to this scope");
        }
        auto cmdline = fs_.readProc(pid + "/cmdline");
        if (cmdline.ok()) vm.uuid = qemuUuidFromCmdline(*cmdline).value_or("");
        if (vm.uuid.empty()) scan_.notes.push_back(scope.str() + ": process " + pid + " gives no -uuid");
      }
      scan_.vms.push_back(std::move(vm));
    }
    return {};
  }

  const CgroupFs& fs_;
  const CgroupBackend& backend_;
  const TreeLayout& layout_;
  const std::string hierarchy_;
  NodeScan scan_;
};

}  // namespace

std::optional<std::string> qemuUuidFromCmdline(std::string_view cmdline) {
  std::vector<std::string_view> args;
  size_t start = 0;
  while (start < cmdline.size()) {
    const size_t end = std::min(cmdline.find('\0', start), cmdline.size());
    args.push_back(cmdline.substr(start, end - start));
    start = end + 1;
  }
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "-uuid") continue;
    if (isUuid(args[i + 1])) return std::string(args[i + 1]);
  }
  return std::nullopt;
}

Result<NodeScan> scanNode(const CgroupFs& fs, const CgroupBackend& backend, const TreeLayout& layout) {
  return Scanner(fs, backend, layout).run();
}

}  // namespace vri
