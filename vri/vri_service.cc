#include "vri/vri_service.h"

#include "vri/grpc_status.h"

namespace vri {

namespace {

Result<QosClass> qosFrom(v1::Qos qos) {
  switch (qos) {
    case v1::GUARANTEED: return QosClass::kGuaranteed;
    case v1::BURSTABLE: return QosClass::kBurstable;
    case v1::BEST_EFFORT: return QosClass::kBestEffort;
    default: return Error::invalidArgument("qos: must be GUARANTEED, BURSTABLE or BEST_EFFORT");
  }
}

Result<VmSpec> vmFrom(const v1::AdmitVmRequest& r) {
  VmSpec vm;
  vm.uuid = r.uuid();
  vm.cpu.name = r.name();
  vm.cpu.vcpus = r.vcpus();
  switch (r.cpu_policy()) {
    case v1::VM_CPU_POLICY_UNSPECIFIED:
    case v1::SHARED: vm.cpu.cpuPolicy = VmCpuPolicy::kShared; break;
    case v1::DEDICATED: vm.cpu.cpuPolicy = VmCpuPolicy::kDedicated; break;
    case v1::MIXED: vm.cpu.cpuPolicy = VmCpuPolicy::kMixed; break;
    default: return Error::invalidArgument("cpu_policy: unknown value");
  }
  vm.cpu.mixedDedicatedVcpus.assign(r.mixed_dedicated_vcpus().begin(), r.mixed_dedicated_vcpus().end());
  vm.cpu.guestThreadsPerCore = r.guest_threads_per_core() > 0 ? r.guest_threads_per_core() : 1;
  switch (r.thread_policy()) {
    case v1::THREAD_POLICY_UNSPECIFIED:
    case v1::PREFER: vm.cpu.threadPolicy = ThreadPolicy::kPrefer; break;
    case v1::ISOLATE: vm.cpu.threadPolicy = ThreadPolicy::kIsolate; break;
    case v1::REQUIRE: vm.cpu.threadPolicy = ThreadPolicy::kRequire; break;
    default: return Error::invalidArgument("thread_policy: unknown value");
  }
  vm.cpu.emulatorPolicy = r.isolate_emulator() ? HelperThreadPolicy::kIsolate : HelperThreadPolicy::kShared;
  vm.memoryBytes = r.memory_bytes();
  vm.hugepageSize = r.hugepage_size();
  vm.strictNumaNodes.assign(r.strict_numa_nodes().begin(), r.strict_numa_nodes().end());
  return vm;
}

}  // namespace

grpc::Status VriService::denyOnReadOnly(const char* method) const {
  if (access_ == SocketAccess::kAdmin) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                      std::string(method) + " changes the ledger; use the admin socket");
}

grpc::Status VriService::GetNode(grpc::ServerContext*, const v1::GetNodeRequest*, v1::Node* reply) {
  const LedgerSnapshot s = ledger_.snapshot();
  reply->set_online_cpus(ledger_.topology().onlineCpus().count());
  reply->set_numa_nodes(static_cast<int>(ledger_.topology().numaNodes().size()));
  reply->set_reserved_cpus(s.reserved.format());
  reply->set_shared_cpus(s.shared.format());
  for (const auto& [owner, grant] : s.grants) (*reply->mutable_exclusive_cpus())[owner] = grant.all().format();
  reply->set_shared_demand_milli(s.sharedDemandMilli);
  reply->set_admitted_memory_bytes(s.admittedMemoryBytes);
  return grpc::Status::OK;
}

grpc::Status VriService::AdmitContainer(grpc::ServerContext*, const v1::AdmitContainerRequest* r,
                                        v1::ContainerAllocation* reply) {
  if (auto denied = denyOnReadOnly("AdmitContainer"); !denied.ok()) return denied;
  auto qos = qosFrom(r->qos());
  if (!qos.ok()) return toGrpcStatus(qos.error());
  const PodSpec pod{r->pod_uid(), r->pod_name(), *qos, 0, 0};
  ContainerSpec container{r->container_name(),  r->container_id(), r->init(),   r->cpu_request_milli(),
                          r->cpu_limit_milli(), std::nullopt,      std::nullopt};
  if (r->memory_limit_bytes() > 0) container.memoryLimitBytes = r->memory_limit_bytes();
  if (r->memory_request_bytes() > 0) container.memoryRequestBytes = r->memory_request_bytes();
  auto placed = ledger_.admitContainer(pod, container);
  if (!placed.ok()) return toGrpcStatus(placed.error());
  reply->set_cpuset_cpus(placed->cpus.format());
  reply->set_cpuset_mems(placed->mems.format());
  reply->set_exclusive(!placed->exclusive.empty());
  return grpc::Status::OK;
}

grpc::Status VriService::ReleaseContainer(grpc::ServerContext*, const v1::ReleaseContainerRequest* r, v1::Released*) {
  if (auto denied = denyOnReadOnly("ReleaseContainer"); !denied.ok()) return denied;
  auto released = ledger_.releaseContainer(r->pod_uid(), r->container_name());
  return released.ok() ? grpc::Status::OK : toGrpcStatus(released.error());
}

grpc::Status VriService::ReleasePod(grpc::ServerContext*, const v1::ReleasePodRequest* r, v1::Released*) {
  if (auto denied = denyOnReadOnly("ReleasePod"); !denied.ok()) return denied;
  auto released = ledger_.releasePod(r->pod_uid());
  return released.ok() ? grpc::Status::OK : toGrpcStatus(released.error());
}

grpc::Status VriService::AdmitVm(grpc::ServerContext*, const v1::AdmitVmRequest* r, v1::VmAllocation* reply) {
  if (auto denied = denyOnReadOnly("AdmitVm"); !denied.ok()) return denied;
  auto vm = vmFrom(*r);
  if (!vm.ok()) return toGrpcStatus(vm.error());
  auto placed = ledger_.admitVm(*vm);
  if (!placed.ok()) return toGrpcStatus(placed.error());
  for (int cpu : placed->vcpuCpus) reply->add_vcpu_cpus(cpu);
  reply->set_emulator_cpus(placed->emulatorCpus.format());
  reply->set_exclusive_cpus(placed->exclusive.format());
  reply->set_held_back_cpus(placed->heldBack.format());
  reply->set_cpuset_mems(placed->mems.format());
  return grpc::Status::OK;
}

grpc::Status VriService::ReleaseVm(grpc::ServerContext*, const v1::ReleaseVmRequest* r, v1::Released*) {
  if (auto denied = denyOnReadOnly("ReleaseVm"); !denied.ok()) return denied;
  auto released = ledger_.releaseVm(r->uuid());
  return released.ok() ? grpc::Status::OK : toGrpcStatus(released.error());
}

}  // namespace vri
