// The tenants as the API shows them: ListTenants, GetTenant, and finding a VM
// by UUID or name (MoveVm too).
#include "base/quote.h"
#include "proto/grpc_status.h"
#include "vri/api_convert.h"
#include "vri/vri_service.h"

namespace vri {

namespace {

std::optional<CgroupPath> scopeOf(const LedgerState& state, const std::string& uuid) {
  const CgroupPath* scope = state.vmScope(uuid);
  return scope != nullptr ? std::optional<CgroupPath>(*scope) : std::nullopt;
}

}  // namespace

grpc::Status VriService::listTenants(const v1::ListTenantsRequest& request, v1::TenantList& out) {
  const v1::ListTenantsRequest* r = &request;
  v1::TenantList* reply = &out;
  const StatePtr s = node_.state();
  const CpuSet shared = s->shared();
  const CpuSet wide = node_.wideSharedCpus(*s);  // once: it walks the grants
  if (r->kind() != v1::ListTenantsRequest::VMS) {
    for (const auto& [uid, pod] : s->pods)
      fillPodInfo(pod, shared, wide, *kubeletNamer_, *reply->add_tenants()->mutable_pod());
  }
  if (r->kind() != v1::ListTenantsRequest::PODS) {
    for (const auto& [uuid, vm] : s->vms)
      fillVmInfo(vm, shared, scopeOf(*s, uuid), node_.vmMemoryBytes(vm), *reply->add_tenants()->mutable_vm());
  }
  reply->set_sequence(s->sequence);
  return grpc::Status::OK;
}

grpc::Status VriService::getTenant(const v1::GetTenantRequest& request, v1::Tenant& out) {
  const v1::GetTenantRequest* r = &request;
  v1::Tenant* reply = &out;
  const StatePtr s = node_.state();
  const CpuSet shared = s->shared();
  switch (r->key_case()) {
    case v1::GetTenantRequest::kPodUid: {
      const PodRecord* pod = s->pod(r->pod_uid());
      if (!pod) return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod_uid: no pod " + r->pod_uid() + " is admitted");
      fillPodInfo(*pod, shared, node_.wideSharedCpus(*s), *kubeletNamer_, *reply->mutable_pod());
      return grpc::Status::OK;
    }
    case v1::GetTenantRequest::kPod: {
      const PodRecord* pod = s->pod(r->pod());
      if (!pod) {
        for (const auto& [uid, record] : s->pods) {
          if (record.spec.name != r->pod()) continue;
          if (pod) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "pod: two pods are named " + r->pod());
          pod = &record;
        }
      }
      if (!pod) return grpc::Status(grpc::StatusCode::NOT_FOUND, "pod: no pod with UID or name " + r->pod());
      fillPodInfo(*pod, shared, node_.wideSharedCpus(*s), *kubeletNamer_, *reply->mutable_pod());
      return grpc::Status::OK;
    }
    case v1::GetTenantRequest::kVm: {
      auto vm = findVm(*s, r->vm());
      if (!vm.ok()) return toGrpcStatus(vm.error());
      fillVm(*s, **vm, *reply->mutable_vm());
      return grpc::Status::OK;
    }
    default: return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "key: give pod_uid, pod or vm");
  }
}

Result<const VmRecord*> VriService::findVm(const LedgerState& state, const std::string& key) const {
  if (const VmRecord* vm = state.vm(key)) return vm;
  // By name: names are unique among defined domains, but look them all up to be sure.
  const VmRecord* found = nullptr;
  for (const auto& [uuid, record] : state.vms) {
    if (record.spec.cpu.name != key) continue;
    if (found) return Error::failedPrecondition("vm: two VMs are named " + key);
    found = &record;
  }
  if (!found) return Error::notFound("vm: no VM with UUID or name " + key);
  return found;
}

void VriService::fillVm(const LedgerState& state, const VmRecord& vm, v1::VmInfo& out) const {
  fillVmInfo(vm, state.shared(), scopeOf(state, vm.spec.uuid), node_.vmMemoryBytes(vm), out);
}

}  // namespace vri
