#include "vri/cgroup_sync.h"

#include <algorithm>
#include <optional>
#include <set>

#include "base/text.h"
#include "cgroup-model/libvirt_namer.h"
#include "cgroup-model/unit_ownership.h"
#include "vri/ledger_tree.h"

namespace vri {

Result<std::unique_ptr<CgroupBackend>> backendForHost(const CgroupFs& fs, const std::string& cgroupRoot,
                                                      std::optional<CgroupVersion> version,
                                                      const std::vector<std::string>& v1Controllers) {
  VRI_ASSIGN_OR_RETURN(CgroupMounts mounts, readCgroupMounts(fs));
  std::string unified_controllers;
  if (!mounts.unified.empty()) {
    auto controllers = fs.read(CgroupDir{"", CgroupPath{}}, "cgroup.controllers");
    if (controllers.ok()) unified_controllers = *controllers;
  }
  VRI_ASSIGN_OR_RETURN(CgroupVersion chosen, chooseCgroupVersion(mounts, unified_controllers, version));
  if (chosen == CgroupVersion::kV2) return makeV2Backend();
  std::map<std::string, std::string> hierarchies;
  for (const std::string& controller : v1Controllers) {
    auto hierarchy = v1Hierarchy(mounts, controller, cgroupRoot);
    if (hierarchy.ok()) hierarchies[controller] = *hierarchy;
  }
  for (const char* required : {"cpuset", "cpu"}) {
    if (!hierarchies.count(required))
      return Error::failedPrecondition(std::string("no cgroup v1 hierarchy mounted for the ") + required +
                                       " controller below " + cgroupRoot);
  }
  return makeV1Backend(std::move(hierarchies));
}

CgroupSync::CgroupSync(CgroupFs& fs, std::unique_ptr<CgroupBackend> backend, TreeLayout layout,
                       NodeAllocatable allocatable, std::shared_ptr<const Topology> topology, int64_t sharedVcpuMilli,
                       std::vector<std::string> controllers, SystemdCgroupFs* systemd)
    : fs_(fs),
      backend_(std::move(backend)),
      layout_(std::move(layout)),
      allocatable_(allocatable),
      topology_(std::move(topology)),
      sharedVcpuMilli_(sharedVcpuMilli),
      controllers_(std::move(controllers)),
      kubeletNamer_(makeKubeletNamer(layout_.driver, layout_.kubeletParent)),
      libvirtNamer_(layout_.libvirt, layout_.machinePartition),
      systemd_(systemd),
      caches_(CpusetDeltaWriter(fs_, backend_->version())) {
  CgroupSettings cpus_only;
  cpus_only.cpus = CpuSet{0};
  auto files = backend_->files(cpus_only);
  cpusetHierarchy_ = files.ok() && !files->empty() ? files->front().hierarchy : backend_->primaryHierarchy();
}

Result<NodeScan> CgroupSync::scan() const { return scanNode(fs_, *backend_, layout_); }

Result<CgroupPath> CgroupSync::findVmScope(int qemuPid) const {
  if (qemuPid <= 0) return Error::invalidArgument("qemu_pid: must be a process id, got " + std::to_string(qemuPid));
  VRI_ASSIGN_OR_RETURN(
      std::string cgroups,
      fs_.readProc(std::to_string(qemuPid) + "/cgroup").context("qemu_pid " + std::to_string(qemuPid)));
  const std::string controller = backend_->version() == CgroupVersion::kV1 ? "cpuset" : "";
  return vmScopeFromProcCgroup(cgroups, controller, layout_.machinePartition)
      .context("qemu_pid " + std::to_string(qemuPid));
}

CpuSet CgroupSync::wideSharedCpus(const LedgerState& state) const {
  if (!layout_.cpusetPartitions) return state.shared();
  return vri::wideSharedCpus(layout_, nodeResources(state, inputs()));
}

CpuSet CgroupSync::runtimeSharedCpus(const LedgerState& state, const PodRecord& pod) const {
  CpuSet cpus = wideSharedCpus(state);
  if (!layout_.cpusetPartitions) return cpus;
  for (const auto& [name, c] : pod.containers) cpus -= c.exclusive;
  return cpus;
}

bool CgroupSync::keepsOwnCpuset(const CgroupPath& path) const {
  return !layout_.systemdUnits || !inheritsCpuset(unitKindOf(layout_, *kubeletNamer_, path));
}

std::shared_ptr<const DesiredTree> CgroupSync::nodeCgroups(const Caches& caches, const LedgerState& state) const {
  if (caches.lastNode.first.get() == &state) return caches.lastNode.second;
  auto tree = std::make_shared<DesiredTree>();
  addNodeCgroups(layout_, *kubeletNamer_, nodeResources(state, inputs()), *tree);
  dropUnmanaged(*tree);
  return tree;
}

void CgroupSync::dropUnmanaged(DesiredTree& tree) const {
  if (backend_->version() != CgroupVersion::kV1) return;
  const auto managed = [&](const char* controller) {
    return std::find(controllers_.begin(), controllers_.end(), controller) != controllers_.end();
  };
  for (auto& [path, spec] : tree.cgroups) {
    if (!managed("memory")) spec.settings.memoryMax.reset();
    if (!managed("hugetlb")) {
      spec.settings.hugetlbMax.clear();
      spec.verified.hugetlbMax.clear();
    }
    if (!managed("pids")) spec.settings.pidsMax.reset();
  }
}

Result<void> CgroupSync::addSpecChanges(const CgroupPath& path, const CgroupSpec* before, const CgroupSpec& after,
                                        Scratch& scratch, std::vector<CpusetChange>& cpusets,
                                        std::vector<PlainWrite>& plain) const {
  const CgroupDir* dir = &scratch.dirs.emplace_back(CgroupDir{cpusetHierarchy_, path});
  const auto keep = [&](const CpuSet& value) { return &scratch.values.emplace_back(value); };
  const CgroupSettings none;
  const CgroupSettings& was = before != nullptr ? before->settings : none;
  if (after.settings.cpus) {
    cpusets.push_back({dir, "cpuset.cpus", keep(was.cpus.value_or(CpuSet())), keep(*after.settings.cpus)});
  }
  if (after.settings.mems) {
    cpusets.push_back({dir, "cpuset.mems", keep(was.mems.value_or(CpuSet())), keep(*after.settings.mems)});
  }
  if (after.settings.cpusExclusive) {
    cpusets.push_back({dir, "cpuset.cpus.exclusive", keep(was.cpusExclusive.value_or(CpuSet())),
                       keep(*after.settings.cpusExclusive)});
  }
  CgroupSettings values_before = was, values_after = after.settings;
  for (CgroupSettings* values : {&values_before, &values_after}) {
    values->cpus.reset();
    values->mems.reset();
    values->cpusExclusive.reset();
  }
  auto files_before = backend_->files(values_before);
  // Values the backend cannot write would be values the ledger holds and the cgroup never gets: the
  // whole write fails instead, before anything is written.
  VRI_ASSIGN_OR_RETURN(const std::vector<ControlFile> files_after,
                       std::move(backend_->files(values_after)).context(dir->describe()));
  for (const ControlFile& file : files_after) {
    bool same = false;
    if (files_before.ok()) {
      for (const ControlFile& old : *files_before) {
        if (old.hierarchy == file.hierarchy && old.file == file.file) same = old.value == file.value;
      }
    }
    if (!same) plain.push_back({{file.hierarchy, path}, file.file, file.value});
  }
  return {};
}

CgroupSync::Followers& CgroupSync::podFollowers(Caches& caches, const std::string& uid, const PodRecord& pod,
                                                const LedgerState& state) {
  Followers& cached = caches.podFollowers[uid];
  if (cached.record.get() == &pod) return cached;
  cached = Followers{state.pods.findShared(uid), nullptr, {}, {}, {}, {}, {}, {}};
  for (const auto& [name, c] : pod.containers) cached.own |= c.exclusive;
  if (pod.spec.outsideKubeletTree) return cached;  // the runtime's cgroups: the shim has it follow the pool
  auto pod_path = kubeletNamer_->pod(pod.spec.qos, uid);
  if (!pod_path.ok()) return cached;
  if (!cached.own.empty() || keepsOwnCpuset(*pod_path))
    cached.cgroups.push_back({{cpusetHierarchy_, *pod_path}, false, true});
  for (const auto& [name, c] : pod.containers) {
    if (c.spec.id.empty() || !c.exclusive.empty()) continue;
    auto path = kubeletNamer_->container(pod.spec.qos, uid, c.spec.id);
    if (path.ok()) cached.cgroups.push_back({{cpusetHierarchy_, *path}, true, false});
  }
  // The sandbox (pause) cgroup runs on the shared pool too: it narrows and widens with it.
  if (!pod.sandboxId.empty()) {
    auto path = kubeletNamer_->container(pod.spec.qos, uid, pod.sandboxId);
    if (path.ok()) cached.cgroups.push_back({{cpusetHierarchy_, *path}, true, false});
  }
  return cached;
}

Result<std::vector<CgroupDir>> CgroupSync::containerCpusetDirs(const PodRecord& pod, const std::string& name) const {
  const auto c = pod.containers.find(name);
  if (c == pod.containers.end() || c->second.spec.id.empty() || pod.spec.outsideKubeletTree)
    return Error::notFound("container " + name + " of pod " + pod.spec.name + " has no cgroup of vrid's tree");
  VRI_ASSIGN_OR_RETURN(CgroupPath podPath, kubeletNamer_->pod(pod.spec.qos, pod.spec.uid));
  VRI_ASSIGN_OR_RETURN(CgroupPath path, kubeletNamer_->container(pod.spec.qos, pod.spec.uid, c->second.spec.id));
  return std::vector<CgroupDir>{{cpusetHierarchy_, podPath}, {cpusetHierarchy_, path}};
}

Result<uint64_t> CgroupSync::moveContainerMemory(const Ledger::Writer&, const PodRecord& pod, const std::string& name,
                                                 const CpuSet& to, const MemoryMover& mover) {
  auto dirs = containerCpusetDirs(pod, name);
  if (!dirs.ok()) return dirs.error().code() == ErrorCode::kNotFound ? Result<uint64_t>(uint64_t{0}) : dirs.error();
  for (const CgroupDir& dir : *dirs) {
    VRI_ASSIGN_OR_RETURN(const std::string text, fs_.read(dir, "cpuset.mems"));
    if (text.empty()) continue;  // v2: the parent's, which holds them
    VRI_ASSIGN_OR_RETURN(const CpuSet mems, CpuSet::parse(text));
    if (!to.isSubsetOf(mems)) VRI_TRY(fs_.write(dir, "cpuset.mems", (mems | to).format()));
  }
  VRI_ASSIGN_OR_RETURN(const std::string procs, fs_.read(dirs->back(), "cgroup.procs"));
  MemoryMoveRequest request{{}, to, mover.bytesPerSecond};
  for (const std::string_view line : splitOn(procs, '\n')) {
    if (!line.empty()) request.pids.push_back(std::atoi(std::string(line).c_str()));
  }
  VRI_ASSIGN_OR_RETURN(const MemoryMoveReport report,
                       moveMemoryAtRate(fs_, mover.kernel, request, mover.clock, mover.sleepUntil));
  return report.bytesMoved;
}

CgroupSync::Followers& CgroupSync::vmFollowers(Caches& caches, const std::string& uuid, const VmRecord& vm,
                                               const CgroupPath& scope, const LedgerState& state) {
  Followers& cached = caches.vmFollowers[uuid];
  if (cached.record.get() == &vm && cached.scope.get() == &scope) return cached;
  cached = Followers{
      state.vms.findShared(uuid), state.vmScopes.findShared(uuid), vm.placement.exclusive, {}, {}, {}, {}, {}};
  const VmCpuPlacement& p = vm.placement;
  if (keepsOwnCpuset(scope)) cached.cgroups.push_back({{cpusetHierarchy_, scope}, false, true});
  const CgroupPath threads = libvirtNamer_.threadParent(scope);
  if (threads != scope) cached.cgroups.push_back({{cpusetHierarchy_, threads}, false, true});
  for (const auto& [vcpu, cpu] : p.vcpuCpus) {
    if (cpu != VmCpuPlacement::kShared) continue;
    cached.cgroups.push_back({{cpusetHierarchy_, libvirtNamer_.vcpu(scope, vcpu)}, true, false});
  }
  if (p.emulatorCpus.empty())
    cached.cgroups.push_back({{cpusetHierarchy_, libvirtNamer_.emulator(scope)}, true, false});
  for (const auto& [id, cpu] : p.iothreadCpus) {
    if (cpu != VmCpuPlacement::kShared) continue;
    cached.cgroups.push_back({{cpusetHierarchy_, libvirtNamer_.iothread(scope, id)}, true, false});
  }
  return cached;
}

Result<void> CgroupSync::planNodeAndFollowers(Caches& caches, const StatePtr& beforePtr, const StatePtr& afterPtr,
                                              const LedgerDelta& delta, Scratch& scratch,
                                              std::vector<CpusetChange>& cpusets, std::vector<PlainWrite>& plain) {
  const LedgerState &before = *beforePtr, &after = *afterPtr;
  // Nothing lives below a root that does not exist (a node without kubelet or libvirt yet): one stat each when
  // something below it would be written, and no write tried below it.
  std::optional<bool> pods_known, vms_known;
  const auto present = [&](std::optional<bool>& known, const CgroupPath& root) {
    if (!known) known = fs_.exists({cpusetHierarchy_, root});
    return *known;
  };
  const auto pods_present = [&] { return present(pods_known, kubeletNamer_->kubepods()); };
  const auto vms_present = [&] { return present(vms_known, layout_.machinePartition); };
  const auto absent = [&](const CgroupPath& path) {
    return (path.isWithin(kubeletNamer_->kubepods()) && !pods_present()) ||
           (path.isWithin(layout_.machinePartition) && !vms_present());
  };
  const std::shared_ptr<const DesiredTree> node_before = nodeCgroups(caches, before);
  std::shared_ptr<const DesiredTree> node_after = nodeCgroups(caches, after);
  for (const auto& [path, spec] : node_after->cgroups) {  // by path: parents first
    const auto old = node_before->cgroups.find(path);
    if (old != node_before->cgroups.end() && old->second.settings == spec.settings) continue;  // nothing moved
    if (absent(path)) continue;
    VRI_TRY(addSpecChanges(path, old == node_before->cgroups.end() ? nullptr : &old->second, spec, scratch, cpusets,
                           plain));
  }
  caches.lastNode = {afterPtr, std::move(node_after)};
  for (const std::string& uid : delta.pods) caches.podFollowers.erase(uid);
  for (const std::string& uuid : delta.vms) caches.vmFollowers.erase(uuid);
  // The pool as the shared cgroups hold it: with cpuset partitions, wide and unchanged by pods' exclusive grants.
  const CpuSet* shared_before = &scratch.values.emplace_back(wideSharedCpus(before));
  const CpuSet* shared_after = &scratch.values.emplace_back(wideSharedCpus(after));
  if (*shared_before == *shared_after) return {};
  cpusets.reserve(cpusets.size() + 3 * (after.pods.size() + after.vmScopes.size()));
  // Every tenant that runs in the shared pool follows it; the touched ones are written on their own.
  // Its parents hold its exclusive CPUs besides; its shared cgroups leave them out (they are disjoint
  // from the pool but for a pod's partitions in the wide pool).
  const auto follow = [&](Followers& tenant) {
    const CpuSet *with_before = shared_before, *with_after = shared_after;
    const CpuSet *without_before = shared_before, *without_after = shared_after;
    if (!tenant.own.empty()) {
      tenant.withBefore = *shared_before | tenant.own;
      tenant.withAfter = *shared_after | tenant.own;
      with_before = &tenant.withBefore;
      with_after = &tenant.withAfter;
      if (shared_before->intersects(tenant.own) || shared_after->intersects(tenant.own)) {
        tenant.withoutBefore = *shared_before - tenant.own;
        tenant.withoutAfter = *shared_after - tenant.own;
        without_before = &tenant.withoutBefore;
        without_after = &tenant.withoutAfter;
      }
    }
    for (const FollowerCgroup& c : tenant.cgroups) {
      cpusets.push_back(c.withOwn ? CpusetChange{&c.dir, "cpuset.cpus", with_before, with_after, c.leaf}
                                  : CpusetChange{&c.dir, "cpuset.cpus", without_before, without_after, c.leaf});
    }
  };
  for (const auto& [uid, pod] : after.pods) {
    if (!pods_present()) break;
    if (!delta.pods.count(uid)) follow(podFollowers(caches, uid, pod, after));
  }
  for (const auto& [uuid, scope] : after.vmScopes) {
    if (!vms_present()) break;
    const VmRecord* vm = after.vm(uuid);
    if (delta.vms.count(uuid) || vm == nullptr || vm->defined) continue;
    follow(vmFollowers(caches, uuid, *vm, scope, after));
  }
  return {};
}

Result<int> CgroupSync::writeTenant(const std::string& what, DesiredTree tree) {
  // An adopted tenant whose owner has not made its cgroup yet has nothing to write (one stat, not one per file).
  if (tree.managedRoots.empty() && !tree.adoptedRoots.empty() &&
      !fs_.exists({backend_->primaryHierarchy(), tree.adoptedRoots.front()})) {
    return 0;
  }
  dropUnmanaged(tree);
  CgroupApplier applier(fs_, *backend_);
  VRI_ASSIGN_OR_RETURN(std::vector<CgroupOp> ops, applier.apply(tree).context(what));
  return static_cast<int>(ops.size());
}

Result<int> CgroupSync::write(const Ledger::Writer& writer, const StatePtr& beforePtr, const StatePtr& afterPtr,
                              const LedgerDelta& delta) {
  const LedgerState &before = *beforePtr, &after = *afterPtr;
  Scratch scratch;
  std::vector<CpusetChange> cpusets;
  std::vector<PlainWrite> plain;
  // Planned first: a plan that fails leaves every cgroup as it was.
  Caches& caches = caches_.get(writer);
  VRI_TRY(planNodeAndFollowers(caches, beforePtr, afterPtr, delta, scratch, cpusets, plain));
  int writes = 0;
  if (layout_.cpusetPartitions) {
    VRI_ASSIGN_OR_RETURN(writes, dissolvePartitions(before, after, delta));
  }
  VRI_ASSIGN_OR_RETURN(DeltaWriteReport shared, caches.cpusetWriter.apply(cpusets, plain));
  writes += shared.writes;
  if (delta.empty()) return writes;
  // The touched tenants last: a new exclusive tenant's CPUs have left every shared cgroup by now.
  const bool everything = layout_.ownership == Ownership::kEverything;
  const NodeResources node = nodeResources(after, inputs());
  for (const std::string& uid : delta.pods) {
    const PodRecord* now = after.pod(uid);
    const PodRecord* was = before.pod(uid);
    if (now == nullptr && !everything) continue;                          // kubelet removes what it made
    if ((now != nullptr ? now : was)->spec.outsideKubeletTree) continue;  // the runtime's cgroups
    VRI_ASSIGN_OR_RETURN(CgroupPath path, kubeletNamer_->pod((now != nullptr ? now : was)->spec.qos, uid));
    DesiredTree tree;
    (everything ? tree.managedRoots : tree.adoptedRoots).push_back(path);
    if (now != nullptr) VRI_TRY(addPodCgroups(layout_, *kubeletNamer_, node, podCgroup(*now, inputs().topology), tree));
    VRI_ASSIGN_OR_RETURN(int n, writeTenant("pod " + uid, std::move(tree)));
    writes += n;
  }
  for (const std::string& uuid : delta.vms) {
    const VmRecord* vm = after.vm(uuid);
    const CgroupPath* scope = after.vmScope(uuid);
    if (vm == nullptr || vm->defined || scope == nullptr) continue;  // libvirt removes a stopped VM's cgroups
    DesiredTree tree;
    tree.adoptedRoots.push_back(*scope);
    VRI_TRY(addVmCgroups(layout_, libvirtNamer_, node, vmCgroup(*vm, *scope, sharedVcpuMilli()), tree));
    VRI_ASSIGN_OR_RETURN(int n, writeTenant("VM " + uuid, std::move(tree)));
    writes += n;
  }
  return writes;
}

Result<int> CgroupSync::dissolvePartitions(const LedgerState& before, const LedgerState& after,
                                           const LedgerDelta& delta) {
  int writes = 0;
  for (const std::string& uid : delta.pods) {
    const PodRecord* was = before.pod(uid);
    if (was == nullptr || was->spec.outsideKubeletTree) continue;
    const PodRecord* now = after.pod(uid);
    VRI_ASSIGN_OR_RETURN(CgroupPath pod_path, kubeletNamer_->pod(was->spec.qos, uid));
    DesiredTree tree;
    tree.adoptedRoots.push_back(pod_path);
    CpuSet kept;  // the pod's exclusive CPUs that stay where they are
    for (const auto& [name, c] : was->containers) {
      if (c.exclusive.empty() || c.spec.id.empty()) continue;
      const ContainerRecord* stays = nullptr;
      if (now != nullptr) {
        const auto it = now->containers.find(name);
        if (it != now->containers.end() && it->second.spec.id == c.spec.id) stays = &it->second;
      }
      if (stays != nullptr && stays->exclusive == c.exclusive) {
        kept |= c.exclusive;
        continue;
      }
      VRI_ASSIGN_OR_RETURN(CgroupPath path, kubeletNamer_->container(was->spec.qos, uid, c.spec.id));
      CgroupSettings& going = tree.cgroups[path].settings;
      going.partitionRoot = false;
      going.cpusExclusive = stays != nullptr ? c.exclusive & stays->exclusive : CpuSet();
      kept |= *going.cpusExclusive;
    }
    if (tree.cgroups.empty()) continue;
    tree.cgroups[pod_path].settings.cpusExclusive = kept;
    VRI_ASSIGN_OR_RETURN(int n, writeTenant("pod " + uid + " (partitions released)", std::move(tree)));
    writes += n;
  }
  return writes;
}

Result<int> CgroupSync::writeMachinePartition(const Ledger::Writer& writer, const LedgerState& state) {
  const std::shared_ptr<const DesiredTree> node = nodeCgroups(caches_.get(writer), state);
  const auto partition = node->cgroups.find(layout_.machinePartition);
  if (partition == node->cgroups.end()) return 0;
  DesiredTree tree;
  tree.adoptedRoots.push_back(layout_.machinePartition);
  tree.cgroups.insert(*partition);
  return writeTenant("machine partition", std::move(tree));
}

Result<int> CgroupSync::handBackToKubelet(const Ledger::Writer& writer, const LedgerState& state, const CpuSet& cpus) {
  (void)writer;  // held: no decision writes meanwhile
  VRI_ASSIGN_OR_RETURN(DesiredTree desired, reconciledTree(state));
  std::set<CgroupPath> kubelets{kubeletNamer_->kubepods(), kubeletNamer_->qos(QosClass::kBurstable),
                                kubeletNamer_->qos(QosClass::kBestEffort)};
  for (const auto& [uid, pod] : state.pods) {
    if (Result<CgroupPath> path = kubeletNamer_->pod(pod.spec.qos, uid); path.ok()) kubelets.insert(*path);
  }
  // Containers on the shared pool get the pool itself, kubelet's default set, also where cpuset
  // partitions had them hold the wide set: kubelet's first reconcile then writes what they hold.
  std::set<CgroupPath> shared;
  for (const auto& [uid, pod] : state.pods) {
    for (const auto& [name, container] : pod.containers) {
      if (!container.exclusive.empty() || container.spec.id.empty()) continue;
      if (Result<CgroupPath> path = kubeletNamer_->container(pod.spec.qos, uid, container.spec.id); path.ok())
        shared.insert(*path);
    }
  }
  for (auto& [path, spec] : desired.cgroups) {
    // A cgroup without a cpuset of its own (a pod slice systemd keeps) has its parent's.
    if (!spec.settings.cpus) continue;
    if (kubelets.count(path) > 0) spec.settings.cpus = cpus;
    if (shared.count(path) > 0) spec.settings.cpus = state.shared();
  }
  CgroupApplier applier(fs_, *backend_);
  VRI_ASSIGN_OR_RETURN(std::vector<CgroupOp> operations, applier.apply(desired));
  return static_cast<int>(operations.size());
}

Result<SyncResult> CgroupSync::reconcile(const Ledger::Writer& writer, const LedgerState& state, bool withDrift,
                                         bool dryRun) {
  VRI_ASSIGN_OR_RETURN(DesiredTree desired, reconciledTree(state));
  SyncResult result;
  if (withDrift) {
    VRI_ASSIGN_OR_RETURN(result.drift, detectDrift(fs_, *backend_, desired));
  }
  CgroupApplier applier(fs_, *backend_);
  if (dryRun) {
    VRI_ASSIGN_OR_RETURN(result.operations, applier.plan(desired));
    return result;
  }
  VRI_ASSIGN_OR_RETURN(result.operations, applier.apply(desired));
  Caches& caches = caches_.get(writer);
  lastUnitsKept_ = 0;
  if (systemd_ != nullptr && !caches.unitsKept) {
    // The files may hold VRI's values already (an earlier vrid wrote them) while systemd does not:
    // a daemon-reload would undo them. Once per start, every unit that exists gets the values this
    // reconcile did not just write (those went to systemd with their write).
    std::set<std::pair<CgroupPath, std::string>> written;
    for (const CgroupOp& op : result.operations) {
      if (op.kind == CgroupOp::Kind::kWrite) written.insert({op.dir.path, op.file});
    }
    for (const auto& [path, spec] : desired.cgroups) {
      if (spec.settings.empty() || !fs_.exists({cpusetHierarchy_, path})) continue;
      VRI_ASSIGN_OR_RETURN(std::vector<ControlFile> files, backend_->files(spec.settings));
      const CgroupPath& dir = path;  // clang 14 captures no structured binding
      std::erase_if(files, [&](const ControlFile& f) { return written.count({dir, f.file}) > 0; });
      if (files.empty()) continue;
      VRI_ASSIGN_OR_RETURN(bool kept, systemd_->keep(path, files));
      if (kept) ++lastUnitsKept_;
    }
    caches.unitsKept = true;
  }
  return result;
}

}  // namespace vri
