// The gRPC face of vrid: convert the message, ask the node manager, answer.
// The only place a Result becomes a grpc::Status.
//
// vrid serves it twice, on a read-only socket anyone may open and on an admin
// socket; gRPC does not tell a service who called, so the read-only instance
// refuses every mutating call itself, with PERMISSION_DENIED.
#pragma once

#include "cgroup-model/rate_limited_log.h"
#include "cgroup-model/worker_pool.h"
#include "proto/vri.grpc.pb.h"
#include "vri/call_gate.h"
#include "vri/node_manager.h"

namespace vri {

enum class SocketAccess { kReadOnly, kAdmin };

// The calls that decide are served with gRPC's callback API and run on one
// thread of the service's own (a one-thread WorkerPool), which finishes each call; the
// readers stay synchronous: they take the ledger's state in O(1) and never wait.
using VriServiceBase = v1::Vri::WithCallbackMethod_AdmitPod<v1::Vri::WithCallbackMethod_AdmitContainer<
    v1::Vri::WithCallbackMethod_ResizeContainer<v1::Vri::WithCallbackMethod_ReleaseContainer<
        v1::Vri::WithCallbackMethod_ReleasePod<v1::Vri::WithCallbackMethod_AdmitVm<
            v1::Vri::WithCallbackMethod_ReserveVm<v1::Vri::WithCallbackMethod_ResizeVm<
                v1::Vri::WithCallbackMethod_VmStarted<v1::Vri::WithCallbackMethod_ReleaseVm<v1::Vri::Service>>>>>>>>>>;

class VriService final : public VriServiceBase {
 public:
  // `gate` counts the deciding calls in flight for shutdown; `refusals` takes one
  // line per refused call (rate-limited). Both outlive the service.
  VriService(NodeManager& node, SocketAccess access, CallGate& gate, RateLimitedLog& refusals)
      : node_(node),
        access_(access),
        gate_(gate),
        refusals_(refusals),
        kubeletNamer_(makeKubeletNamer(node.layout().driver, node.layout().kubeletParent)) {}

  using Context = grpc::ServerContext;
  using CallbackContext = grpc::CallbackServerContext;
  using Reactor = grpc::ServerUnaryReactor;
  grpc::Status GetNode(Context*, const v1::GetNodeRequest*, v1::Node* reply) override;
  Reactor* AdmitPod(CallbackContext*, const v1::AdmitPodRequest* request, v1::PodAllocation* reply) override;
  Reactor* AdmitContainer(CallbackContext*, const v1::AdmitContainerRequest* request,
                          v1::ContainerAllocation* reply) override;
  Reactor* ResizeContainer(CallbackContext*, const v1::AdmitContainerRequest* request,
                           v1::ContainerAllocation* reply) override;
  Reactor* ReleaseContainer(CallbackContext*, const v1::ReleaseContainerRequest* request, v1::Released*) override;
  Reactor* ReleasePod(CallbackContext*, const v1::ReleasePodRequest* request, v1::Released*) override;
  Reactor* AdmitVm(CallbackContext*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  Reactor* ReserveVm(CallbackContext*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  Reactor* ResizeVm(CallbackContext*, const v1::AdmitVmRequest* request, v1::VmAllocation* reply) override;
  Reactor* VmStarted(CallbackContext*, const v1::VmStartedRequest* request, v1::VmStartedReply* reply) override;
  Reactor* ReleaseVm(CallbackContext*, const v1::ReleaseVmRequest* request, v1::Released*) override;
  grpc::Status ListTenants(Context*, const v1::ListTenantsRequest* request, v1::TenantList* reply) override;
  grpc::Status GetTenant(Context*, const v1::GetTenantRequest* request, v1::Tenant* reply) override;
  grpc::Status Watch(Context* context, const v1::WatchRequest*, grpc::ServerWriter<v1::Event>* writer) override;
  grpc::Status Reconcile(Context*, const v1::ReconcileRequest* request, v1::ReconcileReply* reply) override;

 private:
  // One line for a refused call: which call, on which socket, and why.
  void logRefusal(const char* method, const grpc::Status& status) const;
  // Runs `call` on the decision thread and finishes the call with its status.
  Reactor* decide(CallbackContext* context, const char* method, std::function<grpc::Status()> call);
  grpc::Status admitPod(const v1::AdmitPodRequest& request, v1::PodAllocation& reply);
  grpc::Status admitContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply);
  grpc::Status resizeContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply);
  grpc::Status releaseContainer(const v1::ReleaseContainerRequest& request, v1::Released& reply);
  grpc::Status releasePod(const v1::ReleasePodRequest& request, v1::Released& reply);
  grpc::Status vmStarted(const v1::VmStartedRequest& request, v1::VmStartedReply& reply);
  grpc::Status denyOnReadOnly(const char* method) const;
  grpc::Status vmDecision(const v1::AdmitVmRequest& request, v1::VmAllocation& reply,
                          Result<VmCpuPlacement> (NodeManager::*decide)(const VmSpec&));

  NodeManager& node_;
  SocketAccess access_;
  CallGate& gate_;
  RateLimitedLog& refusals_;
  const std::unique_ptr<KubeletNamer> kubeletNamer_;  // the node's, for every allocation and pod path answered
  WorkerPool decisions_{1};                           // last: destroyed first, after running what is queued
};

}  // namespace vri
