#include "vri/api_convert.h"

#include <algorithm>
#include <map>

#include "base/amount_limits.h"
#include "base/quote.h"
#include "base/uuid.h"
#include "cgroup-model/cgroup_values.h"
#include "libvirt-bridge/domain_xml.h"

namespace vri {

Result<QosClass> qosFrom(v1::Qos qos) {
  switch (qos) {
    case v1::GUARANTEED: return QosClass::kGuaranteed;
    case v1::BURSTABLE: return QosClass::kBurstable;
    case v1::BEST_EFFORT: return QosClass::kBestEffort;
    default: return Error::invalidArgument("qos: must be GUARANTEED, BURSTABLE or BEST_EFFORT");
  }
}

v1::Qos qosTo(QosClass qos) {
  switch (qos) {
    case QosClass::kGuaranteed: return v1::GUARANTEED;
    case QosClass::kBurstable: return v1::BURSTABLE;
    case QosClass::kBestEffort: return v1::BEST_EFFORT;
  }
  return v1::QOS_UNSPECIFIED;
}

namespace {

Result<void> checkPodUid(const std::string& uid) { return validatePodUid(uid).context("pod_uid"); }

// "namespace/name": a namespace of at most 63 characters and a name of at most 253.
Result<std::string> podName(const std::string& name, const std::string& uid) {
  if (name.empty()) return uid;
  const size_t slash = name.find('/');
  const size_t namespace_length = slash == std::string::npos ? 0 : slash;
  const size_t name_length = slash == std::string::npos ? name.size() : name.size() - slash - 1;
  if (namespace_length > 63 || name_length > 253 ||
      std::any_of(name.begin(), name.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    return Error::invalidArgument("pod_name: not a namespace (at most 63 characters) / name (at most 253): " +
                                  quoteForMessage(name));
  return name;
}

Result<ContainerSpec> containerSpec(const std::string& name, const std::string& id, bool init, int64_t request,
                                    int64_t limit, uint64_t memoryLimit, uint64_t memoryRequest,
                                    const google::protobuf::RepeatedPtrField<v1::HugepageLimit>& hugepages) {
  VRI_TRY(validateContainerName(name));
  if (!id.empty() &&
      (id.size() > 128 || id.starts_with(".") ||
       id.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.:-") != std::string::npos))
    return Error::invalidArgument("container_id: not a runtime id: " + quoteForMessage(id));
  // Amounts are checked by the ledger, on every decision that takes them.
  ContainerSpec spec{name, id, init, request, limit, std::nullopt, std::nullopt};
  if (memoryLimit > 0) spec.memoryLimitBytes = memoryLimit;
  if (memoryRequest > 0) spec.memoryRequestBytes = memoryRequest;
  for (const v1::HugepageLimit& pages : hugepages) {
    if (!spec.hugepageLimits.emplace(pages.page_size_bytes(), pages.limit_bytes()).second)
      return Error::invalidArgument("hugepage_limits: page size " + std::to_string(pages.page_size_bytes()) +
                                    " given twice");
  }
  return spec;
}

}  // namespace

namespace {

// The pod's QoS class: as given, or read from its cgroup parent by the namer
// that builds this node's names (kubelet passes the whole path under cgroupfs,
// the pod's slice name under systemd). Both given: they must agree.
Result<QosClass> podQos(const std::string& uid, v1::Qos given, const std::string& cgroupParent,
                        const KubeletNamer& namer) {
  std::optional<QosClass> qos;
  if (given != v1::QOS_UNSPECIFIED) {
    VRI_ASSIGN_OR_RETURN(qos, qosFrom(given));
  }
  if (!cgroupParent.empty()) {
    VRI_ASSIGN_OR_RETURN(const KubeletPod named, namer.podOfCgroupParent(cgroupParent));
    if (named.uid != uid)
      return Error::invalidArgument("cgroup_parent: " + quoteForMessage(cgroupParent) +
                                    " is not where this node puts pod " + uid);
    if (qos && *qos != named.qos)
      return Error::invalidArgument("qos: does not match cgroup_parent " + quoteForMessage(cgroupParent));
    qos = named.qos;
  }
  if (!qos) return Error::invalidArgument("qos: give the QoS class or the cgroup_parent");
  return *qos;
}

// A pod outside kubelet's tree has neither: no kubelet named its class or its place.
Result<void> checkOutsideKubeletTree(v1::Qos qos, const std::string& cgroupParent) {
  if (!cgroupParent.empty())
    return Error::invalidArgument("outside_kubelet_tree: a pod outside kubelet's tree has no cgroup_parent, got " +
                                  quoteForMessage(cgroupParent));
  if (qos != v1::QOS_UNSPECIFIED)
    return Error::invalidArgument("outside_kubelet_tree: a pod outside kubelet's tree has no QoS class");
  return {};
}

}  // namespace

Result<PodSpec> podFrom(const v1::AdmitContainerRequest& r, const KubeletNamer& namer) {
  VRI_TRY(checkPodUid(r.pod_uid()));
  VRI_ASSIGN_OR_RETURN(std::string name, podName(r.pod_name(), r.pod_uid()));
  if (r.outside_kubelet_tree()) {
    VRI_TRY(checkOutsideKubeletTree(r.qos(), r.cgroup_parent()));
    return PodSpec{r.pod_uid(), std::move(name), QosClass::kBestEffort, 0, 0, true};
  }
  VRI_ASSIGN_OR_RETURN(QosClass qos, podQos(r.pod_uid(), r.qos(), r.cgroup_parent(), namer));
  return PodSpec{r.pod_uid(), std::move(name), qos, 0, 0};
}

Result<PodSpec> podFrom(const v1::AdmitPodRequest& r, const KubeletNamer& namer) {
  VRI_TRY(checkPodUid(r.pod_uid()));
  VRI_ASSIGN_OR_RETURN(std::string name, podName(r.pod_name(), r.pod_uid()));
  if (r.outside_kubelet_tree()) {
    VRI_TRY(checkOutsideKubeletTree(r.qos(), r.cgroup_parent()));
    return PodSpec{
        r.pod_uid(), std::move(name), QosClass::kBestEffort, r.overhead_cpu_milli(), r.overhead_memory_bytes(), true};
  }
  VRI_ASSIGN_OR_RETURN(QosClass qos, podQos(r.pod_uid(), r.qos(), r.cgroup_parent(), namer));
  return PodSpec{r.pod_uid(), std::move(name), qos, r.overhead_cpu_milli(), r.overhead_memory_bytes()};
}

Result<ContainerSpec> containerFrom(const v1::AdmitContainerRequest& r) {
  return containerSpec(r.container_name(), r.container_id(), r.init(), r.cpu_request_milli(), r.cpu_limit_milli(),
                       r.memory_limit_bytes(), r.memory_request_bytes(), r.hugepage_limits());
}

Result<ContainerSpec> containerFrom(const v1::ContainerResources& r) {
  return containerSpec(r.name(), r.id(), r.init(), r.cpu_request_milli(), r.cpu_limit_milli(), r.memory_limit_bytes(),
                       r.memory_request_bytes(), r.hugepage_limits());
}

Result<VmSpec> vmFrom(const v1::AdmitVmRequest& r) {
  VmSpec vm;
  vm.uuid = r.uuid();
  if (vm.uuid.empty()) return Error::invalidArgument("uuid: must not be empty");
  if (!isUuid(vm.uuid)) return Error::invalidArgument("uuid: not a UUID: " + quoteForMessage(vm.uuid));
  // libvirt's rule for names (the hook's too): no '/', no control character, at most 256 bytes.
  if (!r.name().empty()) VRI_TRY(validateDomainName(r.name()).context("name"));
  vm.cpu.name = r.name().empty() ? r.uuid() : r.name();
  if (r.vcpus() < 1 || r.vcpus() > kMaxVmVcpus)
    return Error::invalidArgument("vcpus: must be from 1 to " + std::to_string(kMaxVmVcpus) + ", got " +
                                  std::to_string(r.vcpus()));
  vm.cpu.vcpus = r.vcpus();
  switch (r.cpu_policy()) {
    case v1::VM_CPU_POLICY_UNSPECIFIED:
    case v1::SHARED: vm.cpu.cpuPolicy = VmCpuPolicy::kShared; break;
    case v1::DEDICATED: vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated; break;
    case v1::MIXED: vm.cpu.cpuPolicy = VmCpuPolicy::kMixed; break;
    default: return Error::invalidArgument("cpu_policy: unknown value " + std::to_string(r.cpu_policy()));
  }
  vm.cpu.mixedDedicatedVcpus.assign(r.mixed_dedicated_vcpus().begin(), r.mixed_dedicated_vcpus().end());
  if (r.guest_threads_per_core() < 0 || r.guest_threads_per_core() > 8)
    return Error::invalidArgument("guest_threads_per_core: must be from 0 to 8");
  vm.cpu.guestThreadsPerCore = r.guest_threads_per_core() > 0 ? r.guest_threads_per_core() : 1;
  switch (r.thread_policy()) {
    case v1::THREAD_POLICY_UNSPECIFIED:
    case v1::PREFER: vm.cpu.threadPolicy = ThreadPolicy::kPrefer; break;
    case v1::ISOLATE: vm.cpu.threadPolicy = ThreadPolicy::kIsolate; break;
    case v1::REQUIRE: vm.cpu.threadPolicy = ThreadPolicy::kRequire; break;
    default: return Error::invalidArgument("thread_policy: unknown value " + std::to_string(r.thread_policy()));
  }
  vm.cpu.emulatorPolicy = r.isolate_emulator() ? HelperThreadPolicy::kIsolate : HelperThreadPolicy::kShared;
  if (r.iothreads() < 0 || r.iothreads() > 1024) return Error::invalidArgument("iothreads: must be from 0 to 1024");
  vm.cpu.iothreads = r.iothreads();
  vm.cpu.iothreadPolicy = r.isolate_iothreads() ? HelperThreadPolicy::kIsolate : HelperThreadPolicy::kShared;
  if (r.memory_bytes() == 0) return Error::invalidArgument("memory_bytes: a VM needs memory");
  vm.memoryBytes = r.memory_bytes();
  vm.hugepageSize = r.hugepage_size();
  vm.strictNumaNodes.assign(r.strict_numa_nodes().begin(), r.strict_numa_nodes().end());
  for (int cpu : r.pinned_vcpu_cpus()) {
    if (cpu < -1 || cpu >= CpuSet::kMaxCpus)
      return Error::invalidArgument("pinned_vcpu_cpus: CPU " + std::to_string(cpu) + " does not exist on this host");
    vm.cpu.pinnedVcpuCpus.push_back(cpu);
  }
  vm.cpu.onlineVcpus.assign(r.online_vcpus().begin(), r.online_vcpus().end());
  vm.cpu.maxVcpus = r.max_vcpus();
  vm.cpu.iothreadIds.assign(r.iothread_ids().begin(), r.iothread_ids().end());
  if (auto valid = validateVcpuIds(vm.cpu); !valid.ok()) return valid.error();
  for (const v1::GuestCell& c : r.cells()) {
    auto vcpus = CpuSet::parse(c.vcpus());
    if (!vcpus.ok()) return std::move(vcpus).context("cells").error();
    vm.cells.push_back({c.id(), *vcpus});
  }
  for (const v1::MemoryPart& p : r.memory_parts()) {
    vm.memoryParts.push_back(
        {p.guest_cell(), p.bytes(), p.page_size(), {p.host_nodes().begin(), p.host_nodes().end()}, p.device()});
  }
  vm.alignCells = r.align_cells();
  return vm;
}

v1::AdmitVmRequest vmRequestFrom(const VmSpec& vm) {
  v1::AdmitVmRequest r;
  r.set_uuid(vm.uuid);
  r.set_name(vm.cpu.name);
  r.set_vcpus(vm.cpu.vcpus);
  r.set_cpu_policy(vm.cpu.cpuPolicy == VmCpuPolicy::kDedicated ? v1::DEDICATED
                   : vm.cpu.cpuPolicy == VmCpuPolicy::kMixed   ? v1::MIXED
                                                               : v1::SHARED);
  for (int id : vm.cpu.mixedDedicatedVcpus) r.add_mixed_dedicated_vcpus(id);
  r.set_guest_threads_per_core(vm.cpu.guestThreadsPerCore);
  r.set_thread_policy(vm.cpu.threadPolicy == ThreadPolicy::kIsolate   ? v1::ISOLATE
                      : vm.cpu.threadPolicy == ThreadPolicy::kRequire ? v1::REQUIRE
                                                                      : v1::PREFER);
  r.set_isolate_emulator(vm.cpu.emulatorPolicy == HelperThreadPolicy::kIsolate);
  r.set_iothreads(vm.cpu.iothreads);
  r.set_isolate_iothreads(vm.cpu.iothreadPolicy == HelperThreadPolicy::kIsolate);
  r.set_memory_bytes(vm.memoryBytes);
  r.set_hugepage_size(vm.hugepageSize);
  for (int node : vm.strictNumaNodes) r.add_strict_numa_nodes(node);
  for (int cpu : vm.cpu.pinnedVcpuCpus) r.add_pinned_vcpu_cpus(cpu);
  for (int vcpu : vm.cpu.onlineVcpus) r.add_online_vcpus(vcpu);
  r.set_max_vcpus(vm.cpu.maxVcpus);
  for (IothreadId id : vm.cpu.iothreadIds) r.add_iothread_ids(id);
  for (const GuestCell& cell : vm.cells) {
    v1::GuestCell& c = *r.add_cells();
    c.set_id(cell.id);
    c.set_vcpus(cell.vcpus.format());
  }
  for (const VmMemoryPart& part : vm.memoryParts) {
    v1::MemoryPart& p = *r.add_memory_parts();
    p.set_guest_cell(part.guestCell);
    p.set_bytes(part.bytes);
    p.set_page_size(part.pageSize);
    for (int node : part.hostNodes) p.add_host_nodes(node);
    p.set_device(part.device);
  }
  return r;
}

void fillContainerAllocation(const PodSpec& pod, const ContainerSpec& c, const ContainerPlacement& placement,
                             const KubeletNamer& namer, v1::ContainerAllocation& out) {
  out.set_name(c.name);
  out.set_cpuset_cpus(placement.cpus.format());
  out.set_cpuset_mems(placement.mems.format());
  out.set_exclusive(!placement.exclusive.empty());
  // The values kubelet's runtime writes, computed where the tree computes them.
  const CgroupSettings values =
      containerValues({c.id, c.cpuRequestMilli, c.cpuLimitMilli, c.memoryLimitBytes, std::nullopt, std::nullopt, {}});
  out.set_cpu_shares(values.shares->value);
  out.set_cpu_weight(sharesToWeight(*values.shares).value);
  out.set_cpu_period_us(values.cpuMax ? values.cpuMax->periodUs : CpuMax::kDefaultPeriodUs);
  if (values.cpuMax) out.set_cpu_quota_us(values.cpuMax->quotaUs.value_or(0));
  out.set_memory_limit_bytes(values.memoryMax ? values.memoryMax->value.value_or(0) : 0);
  out.set_outside_kubelet_tree(pod.outsideKubeletTree);
  if (!c.id.empty() && !pod.outsideKubeletTree) {  // the runtime's own place otherwise
    auto path = namer.container(pod.qos, pod.uid, c.id);
    if (path.ok()) out.set_cgroup_path("/" + path->str());
  }
}

namespace {
v1::Event::Kind eventKindMessage(EventKind kind) {
  switch (kind) {
    case EventKind::kAdmitted: return v1::Event::ADMITTED;
    case EventKind::kRefused: return v1::Event::REFUSED;
    case EventKind::kReleased: return v1::Event::RELEASED;
    case EventKind::kResized: return v1::Event::RESIZED;
    case EventKind::kReserved: return v1::Event::RESERVED;
    case EventKind::kStarted: return v1::Event::STARTED;
    case EventKind::kAdopted: return v1::Event::ADOPTED;
    case EventKind::kSharedPoolChanged: return v1::Event::SHARED_POOL_CHANGED;
    case EventKind::kDriftRepaired: return v1::Event::DRIFT_REPAIRED;
    case EventKind::kReconcileFailed: return v1::Event::RECONCILE_FAILED;
    case EventKind::kEventsLost: return v1::Event::EVENTS_LOST;
    case EventKind::kWritePending: return v1::Event::WRITE_PENDING;
    case EventKind::kWriteLanded: return v1::Event::WRITE_LANDED;
    case EventKind::kHalted: return v1::Event::HALTED;
    case EventKind::kMoved: return v1::Event::MOVED;
    case EventKind::kPinsPending: return v1::Event::PINS_PENDING;
    case EventKind::kPinsSet: return v1::Event::PINS_SET;
    case EventKind::kPinsDrifted: return v1::Event::PINS_DRIFTED;
    case EventKind::kPolicyPending: return v1::Event::POLICY_PENDING;
    case EventKind::kPolicyApplied: return v1::Event::POLICY_APPLIED;
  }
  return v1::Event::KIND_UNSPECIFIED;
}
}  // namespace

v1::Event toEventMessage(const Event& event) {
  v1::Event out;
  out.set_sequence(event.sequence);
  out.set_unix_millis(event.unixMillis);
  out.set_kind(eventKindMessage(event.kind));
  out.set_tenant(event.tenant);
  out.set_detail(event.detail);
  return out;
}

void fillVmAllocation(const VmCpuRequest& request, const VmCpuPlacement& p, const CpuSet& shared,
                      v1::VmAllocation& out) {
  for (int cpu : vcpuCpusById(request, p)) out.add_vcpu_cpus(cpu);
  for (const auto& [vcpu, cpu] : p.vcpuCpus) out.add_online_vcpus(vcpu);
  out.set_emulator_cpus(p.emulatorCpus.format());
  out.set_exclusive_cpus(p.exclusive.format());
  out.set_held_back_cpus(p.heldBack.format());
  out.set_cpuset_mems(p.mems.format());
  for (const auto& [cell, nodes] : p.cellNodes) (*out.mutable_cell_nodes())[cell] = nodes.format();
  for (const auto& [id, cpu] : p.iothreadCpus) {
    out.add_iothread_ids(id);
    out.add_iothread_cpus(cpu);
  }
  out.set_shared_cpus(shared.format());
}

void fillPodInfo(const PodRecord& pod, const CpuSet& shared, const CpuSet& wideShared, const KubeletNamer& namer,
                 v1::PodInfo& out) {
  CpuSet runtime_shared = wideShared;  // as CgroupSync::runtimeSharedCpus
  for (const auto& [name, c] : pod.containers) runtime_shared -= c.exclusive;
  out.set_uid(pod.spec.uid);
  out.set_name(pod.spec.name);
  out.set_qos(qosTo(pod.spec.qos));
  out.set_overhead_cpu_milli(pod.spec.overheadCpuMilli);
  out.set_overhead_memory_bytes(pod.spec.overheadMemoryBytes);
  out.set_memory_bytes(podMemoryBytes(pod));
  out.set_sandbox_id(pod.sandboxId);
  out.set_outside_kubelet_tree(pod.spec.outsideKubeletTree);
  for (const auto& [name, c] : pod.containers) {
    v1::ContainerInfo& info = *out.add_containers();
    v1::ContainerResources& r = *info.mutable_resources();
    r.set_name(c.spec.name);
    r.set_id(c.spec.id);
    r.set_init(c.spec.init);
    r.set_cpu_request_milli(c.spec.cpuRequestMilli);
    r.set_cpu_limit_milli(c.spec.cpuLimitMilli);
    r.set_memory_limit_bytes(c.spec.memoryLimitBytes.value_or(0));
    r.set_memory_request_bytes(c.spec.memoryRequestBytes.value_or(0));
    for (const auto& [size, bytes] : c.spec.hugepageLimits) {
      v1::HugepageLimit& pages = *r.add_hugepage_limits();
      pages.set_page_size_bytes(size);
      pages.set_limit_bytes(bytes);
    }
    info.set_exclusive_cpus(c.exclusive.format());
    info.set_cpuset_cpus((c.exclusive.empty() ? shared : c.exclusive).format());
    info.set_cpuset_mems(NumaMemory::mems(c.memory).format());
    const ContainerPlacement placement{c.exclusive, c.exclusive.empty() ? runtime_shared : c.exclusive,
                                       NumaMemory::mems(c.memory), false};
    fillContainerAllocation(pod.spec, c.spec, placement, namer, *info.mutable_allocation());
  }
}

void fillVmInfo(const VmRecord& vm, const CpuSet& shared, const std::optional<CgroupPath>& scope, uint64_t memoryBytes,
                v1::VmInfo& out) {
  out.set_uuid(vm.spec.uuid);
  out.set_name(vm.spec.cpu.name);
  *out.mutable_spec() = vmRequestFrom(vm.spec);
  fillVmAllocation(vm.spec.cpu, vm.placement, shared, *out.mutable_allocation());
  out.set_reserved_only(vm.defined);
  if (scope) out.set_scope(scope->str());
  out.set_memory_bytes(memoryBytes);
}

void fillCgroupTree(const TreeView& view, CgroupVersion version, KubeletDriver driver, v1::CgroupTree& out) {
  out.set_cgroup_version(version == CgroupVersion::kV2 ? "v2" : "v1");
  out.set_cgroup_driver(std::string(kubeletDriverName(driver)));
  out.set_compared(view.compared);
  const auto managed = [&](const CgroupPath& path) {
    for (const CgroupPath& root : view.desired.managedRoots) {
      if (path.isWithin(root)) return true;
    }
    return false;
  };
  std::map<CgroupPath, v1::CgroupNode*> by_path;
  for (const auto& [path, spec] : view.desired.cgroups) {
    v1::CgroupNode& node = *out.add_cgroups();
    node.set_path(path.str());
    if (const auto owner = view.tenants.find(path); owner != view.tenants.end()) node.set_tenant(owner->second);
    node.set_managed(managed(path));
    node.set_threaded(spec.threaded);
    if (const auto files = view.files.find(path); files != view.files.end()) {
      for (const ControlFile& file : files->second) {
        v1::ControlFileValue& value = *node.add_files();
        value.set_file(file.file);
        value.set_value(file.value);
      }
    }
    by_path[path] = &node;
  }
  for (const Drift& d : view.drift) {
    const auto node = by_path.find(d.dir.path);
    if (d.kind == Drift::Kind::kUnknown || node == by_path.end()) {
      out.add_unknown(d.dir.describe());
    } else if (d.kind == Drift::Kind::kMissing) {
      node->second->set_missing(true);
    } else {
      v1::FileDrift& drift = *node->second->add_drift();
      drift.set_file(d.file);
      drift.set_kernel(d.actual);
      drift.set_wanted(d.desired);
    }
  }
}

namespace {

void fillBooks(const ResourceBooks& books, v1::ResourceBooks& out) {
  out.set_capacity(books.capacity);
  out.set_reserved(books.reserved);
  out.set_allocatable(books.allocatable());
  out.set_pods(books.pods);
  out.set_vms(books.vms);
  out.set_free(books.free());
}

}  // namespace

void fillCapacity(const CapacityBooks& books, v1::Capacity& out) {
  fillBooks(books.cpuMilli, *out.mutable_cpu_milli());
  for (const MemoryBooks& row : books.memory) {
    v1::MemoryBooks& m = *out.add_memory();
    m.set_numa_node(row.numaNode);
    m.set_page_size(row.resource);
    fillBooks(row.books, *m.mutable_books());
  }
}

void fillConfigDiff(const ConfigDiff& diff, v1::ConfigDiffReply& out) {
  for (const ConfigSettingChange& change : diff.settings) {
    v1::ConfigSettingDiff& setting = *out.add_settings();
    setting.set_option(change.option);
    setting.set_before(change.before);
    setting.set_after(change.after);
    setting.set_takes_effect(change.takesEffect == ConfigSettingChange::TakesEffect::kApply    ? "apply"
                             : change.takesEffect == ConfigSettingChange::TakesEffect::kReload ? "reload"
                                                                                               : "restart");
  }
  out.set_policy_changes(diff.policyChanges);
  if (diff.policyChanges) {
    out.set_reserved_before(diff.plan.reservedBefore.format());
    out.set_reserved_after(diff.plan.reservedAfter.format());
    out.set_shared_before(diff.plan.sharedBefore.format());
    out.set_shared_after(diff.plan.sharedAfter.format());
    out.set_stays(diff.plan.stays);
    for (const TenantChange& change : diff.plan.changes) {
      v1::TenantPlan& tenant = *out.add_tenants();
      tenant.set_tenant(change.tenant);
      tenant.set_name(change.name);
      tenant.set_breaks(change.verdict == TenantChange::Verdict::kBreaks);
      tenant.set_cpus_before(change.cpusBefore.format());
      tenant.set_cpus_after(change.cpusAfter.format());
      tenant.set_mems_before(change.memsBefore.format());
      tenant.set_mems_after(change.memsAfter.format());
      tenant.set_reason(change.reason);
    }
  }
  for (const std::string& sentence : diff.kubelet) out.add_kubelet(sentence);
  out.set_kubelet_config(diff.kubeletConfig);
}

}  // namespace vri
