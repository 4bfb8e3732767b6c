// The gRPC face of vrid: convert the message, ask the node manager, answer.
// The only place a Result becomes a grpc::Status.
//
// vrid serves it twice, on a read-only socket anyone may open and on an admin
// socket; gRPC does not tell a service who called, so the read-only instance
// refuses every mutating call itself, with PERMISSION_DENIED.
#pragma once

#include "base/rate_limited_log.h"
#include "base/worker_pool.h"
#include "proto/vri.grpc.pb.h"
#include "vri/call_gate.h"
#include "vri/call_metrics.h"
#include "vri/client_versions.h"
#include "vri/config_control.h"
#include "vri/decision_queue.h"
#include "vri/ledger_views.h"
#include "vri/live_pins.h"
#include "vri/node_manager.h"
#include "vri/scan_pacer.h"
#include "vri/stream_slots.h"
#include "vri/usage_sampler.h"

namespace vri {

enum class SocketAccess { kReadOnly, kAdmin };

// Every unary call is served raw: vrid parses the request itself, so bytes
// that are not the call's message get INVALID_ARGUMENT with the reason (gRPC's
// own parsing answers UNIMPLEMENTED or INTERNAL, with no message). The calls
// that decide are served with gRPC's asynchronous API on the service's
// decision thread (decision_queue.h), which takes each request, decides and
// sends the reply itself; the readers answer at once on gRPC's callback
// threads: they take the ledger's state in O(1) and never wait. The scans (a
// dry-run reconcile, the tree compared with the kernel) and MoveVm read the
// cgroupfs while no decision writes, so they are posted to the decision
// thread, from either socket. Watch streams, synchronously.
using VriServiceBase = v1::Vri::WithRawCallbackMethod_GetNode<
    v1::Vri::WithRawMethod_AdmitPod<v1::Vri::WithRawMethod_AdmitContainer<v1::Vri::WithRawMethod_ResizeContainer<
        v1::Vri::WithRawMethod_ReleaseContainer<v1::Vri::WithRawMethod_ReleasePod<
            v1::Vri::WithRawMethod_ContainerStarted<v1::Vri::WithRawMethod_AdmitVm<v1::Vri::WithRawMethod_ReserveVm<
                v1::Vri::WithRawMethod_ResizeVm<v1::Vri::WithRawMethod_VmStarted<v1::Vri::WithRawMethod_ReleaseVm<
                    v1::Vri::WithRawCallbackMethod_ListTenants<v1::Vri::WithRawCallbackMethod_GetTenant<
                        v1::Vri::WithRawCallbackMethod_Reconcile<v1::Vri::WithRawCallbackMethod_GetTree<
                            v1::Vri::WithRawCallbackMethod_MoveVm<v1::Vri::WithRawCallbackMethod_GetUsage<
                                v1::Vri::WithRawMethod_HandBack<v1::Vri::WithRawMethod_DiffConfig<
                                    v1::Vri::WithRawMethod_ApplyConfig<v1::Vri::Service>>>>>>>>>>>>>>>>>>>>>;

class VriService final : public VriServiceBase {
 public:
  // Watch and WatchUsage streams served at once on one socket (each holds a server thread and is
  // written every event): the admin socket's are VRI's own programs (the shim's and the NRI plugin's
  // followers); the read-only socket's are operators' (vrictl events, top), and each one costs every
  // decision its fan-out. The server's thread quota (daemon.cc) leaves room above it for the pollers.
  static constexpr size_t kMaxAdminStreams = 64;
  static constexpr size_t kMaxReadOnlyStreams = 8;
  static constexpr int kMaxServerThreads = kMaxAdminStreams + 16;

  // `gate` counts the deciding calls in flight for shutdown; `refusals` takes one
  // line per refused call (rate-limited); `clients` learns each caller's version.
  // All three outlive the service.
  // `livePins` takes a moved VM's pins to libvirt.
  // `usage` (null: sampling is off) serves GetUsage and WatchUsage; `metrics` (null: none kept) counts
  // every call; `config` (null: none) serves ApplyConfig and DiffConfig of vrid's own file. All
  // outlive the service.
  VriService(NodeManager& node, SocketAccess access, CallGate& gate, RateLimitedLog& refusals, ClientVersions& clients,
             LivePinsSlot& livePins, const Clock& clock, const UsageSampler* usage = nullptr,
             CallMetrics* metrics = nullptr, ConfigControl* config = nullptr)
      : node_(node),
        access_(access),
        gate_(gate),
        refusals_(refusals),
        clients_(clients),
        livePins_(livePins),
        usage_(usage),
        metrics_(metrics),
        config_(config),
        clock_(clock),
        scans_(clock),
        kubeletNamer_(makeKubeletNamer(node.layout().driver, node.layout().kubeletParent)) {}

  using Context = grpc::ServerContext;
  using CallbackContext = grpc::CallbackServerContext;
  using Reactor = grpc::ServerUnaryReactor;
  using Bytes = grpc::ByteBuffer;
  Reactor* GetNode(CallbackContext* c, const Bytes* in, Bytes* out) override;
  Reactor* ListTenants(CallbackContext* c, const Bytes* in, Bytes* out) override;
  Reactor* GetTenant(CallbackContext* c, const Bytes* in, Bytes* out) override;
  Reactor* Reconcile(CallbackContext* c, const Bytes* in, Bytes* out) override;
  Reactor* GetTree(CallbackContext* c, const Bytes* in, Bytes* out) override;
  Reactor* MoveVm(CallbackContext* c, const Bytes* in, Bytes* out) override;
  grpc::Status Watch(Context* context, const v1::WatchRequest* request, grpc::ServerWriter<v1::Event>* writer) override;
  Reactor* GetUsage(CallbackContext* c, const Bytes* in, Bytes* out) override;
  grpc::Status WatchUsage(Context* context, const v1::WatchUsageRequest* request,
                          grpc::ServerWriter<v1::UsageReport>* writer) override;

  // The hook socket's decisions (hook_door.h): what AdmitVm, VmStarted and ReleaseVm decide, asked by
  // the hook logic running inside vrid for `agent` ("vri-hook/<version>"). On the decision thread,
  // with the client's version recorded, the call counted and a refusal logged, as for the gRPC calls
  // of the same name; they block until decided. kUnavailable once vrid is shutting down; the admin
  // instance only.
  Result<v1::VmAllocation> admitVmFor(const std::string& agent, const v1::AdmitVmRequest& request);
  Result<v1::VmStartedReply> vmStartedFor(const std::string& agent, const v1::VmStartedRequest& request);
  Result<void> releaseVmFor(const std::string& agent, const v1::ReleaseVmRequest& request);

  // Serving: the deciding calls are taken from `queue` (the server's, from its builder's
  // AddCompletionQueue) by the decision thread, which starts here, once the server runs. Stopped
  // after the server's Shutdown: the calls still in it answered, the thread joined.
  void startDeciding(std::unique_ptr<grpc::ServerCompletionQueue> queue);
  void stopDeciding();

 private:
  // The deciding calls (vri_service_queued.cc): each method's next call is asked of gRPC as soon as
  // one is taken up.
  struct QueuedMethod;
  class QueuedCall;
  static const std::vector<QueuedMethod>& queuedMethods();
  void awaitNext(const QueuedMethod& method);
  // A deciding call taken up on the decision thread: parsed, checked, decided, counted.
  template <typename Request, typename Reply, Result<void> (VriService::*call)(const Request&, Reply&)>
  grpc::Status decideQueued(const char* method, grpc::ServerContext& context, const grpc::ByteBuffer& in,
                            grpc::ByteBuffer& out);

  // Runs `call` on the decision thread for an in-process caller (the ...For calls above).
  Result<void> decideFor(const char* method, const std::string& agent, std::function<Result<void>()> call);
  // One line for a refused call: which call, on which socket, and why.
  void logRefusal(const char* method, const grpc::Status& status) const;
  // Runs `call` on the decision thread and finishes the call with its status.
  // kDecides: admin socket only; kScans: either socket (the call refuses what changes on the read-only one).
  enum class Runs { kAtOnce, kDecides, kScans };
  Reactor* decide(CallbackContext* context, const char* method, Runs runs, std::function<grpc::Status()> call);
  // The same for a call that finishes later, on another thread: `call` runs on
  // the decision thread and calls `Finish` exactly once, from wherever it is.
  using Finish = std::function<void(grpc::Status)>;
  Reactor* decideAsync(CallbackContext* context, const char* method, Runs runs, std::function<void(Finish)> call);
  // The caller's gRPC user agent ("vri-hook/0.1.0 grpc-c++/…"); empty when it sent none. For the callback
  // and the queued calls alike.
  static std::string userAgent(const grpc::ServerContextBase& context);
  // userAgent, whose version is recorded when it called on the admin socket: anyone may open the
  // read-only one and claim to be a VRI program, versions are what root's programs run.
  std::string callerAgent(const grpc::ServerContextBase& context);
  // A call's outcome as gRPC answers it: `reply` serialized into `out`, or the refusal as the status.
  static grpc::Status replied(const Result<void>& done, const google::protobuf::MessageLite& reply, Bytes& out);
  // The call counted in the metrics (when vrid keeps them), with how long it took since `started`.
  void account(const char* method, const std::string& agent, Runs runs, const grpc::Status& status,
               std::chrono::steady_clock::time_point started) const;
  // Finishes a call whose request bytes are not a `type`.
  Reactor* refuseUnparsed(CallbackContext* context, const char* method, const std::string& type);
  // Parses `in` as `Request` (INVALID_ARGUMENT, logged, when it is not one), runs `call` on the decision
  // thread (`decides`) or at once, and serializes its reply into `out`.
  template <typename Request, typename Reply>
  Reactor* serve(CallbackContext* context, const char* method, const Bytes* in, Bytes* out, Runs runs,
                 std::function<Result<void>(const Request&, Reply&)> call);
  template <typename Request, typename Reply>
  Reactor* serve(CallbackContext* context, const char* method, const Bytes* in, Bytes* out, Runs runs,
                 Result<void> (VriService::*call)(const Request&, Reply&));
  // What each call does, from its request to its reply; serve() turns a refusal into the call's status.
  Result<void> getNode(const v1::GetNodeRequest& request, v1::Node& reply);
  Result<void> listTenants(const v1::ListTenantsRequest& request, v1::TenantList& reply);
  Result<void> getTenant(const v1::GetTenantRequest& request, v1::Tenant& reply);
  Result<void> reconcile(const v1::ReconcileRequest& request, v1::ReconcileReply& reply);
  Result<void> getTree(const v1::GetTreeRequest& request, v1::CgroupTree& reply);
  Result<void> admitVm(const v1::AdmitVmRequest& request, v1::VmAllocation& reply);
  Result<void> reserveVm(const v1::AdmitVmRequest& request, v1::VmAllocation& reply);
  Result<void> resizeVm(const v1::AdmitVmRequest& request, v1::VmAllocation& reply);
  Result<void> releaseVm(const v1::ReleaseVmRequest& request, v1::Released& reply);
  Result<void> admitPod(const v1::AdmitPodRequest& request, v1::PodAllocation& reply);
  Result<void> admitContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply);
  Result<void> resizeContainer(const v1::AdmitContainerRequest& request, v1::ContainerAllocation& reply);
  Result<void> releaseContainer(const v1::ReleaseContainerRequest& request, v1::Released& reply);
  Result<void> releasePod(const v1::ReleasePodRequest& request, v1::Released& reply);
  Result<void> vmStarted(const v1::VmStartedRequest& request, v1::VmStartedReply& reply);
  Result<void> containerStarted(const v1::ContainerStartedRequest& request, v1::ContainerStartedReply& reply);
  Result<void> handBack(const v1::HandBackRequest& request, v1::HandBackReply& reply);
  Result<void> diffConfig(const v1::DiffConfigRequest& request, v1::ConfigDiffReply& reply);
  Result<void> applyConfig(const v1::ApplyConfigRequest& request, v1::ConfigDiffReply& reply);
  // The configuration control, or why there is none.
  Result<ConfigControl*> configControl() const;
  Result<void> getUsage(const v1::GetUsageRequest& request, v1::UsageReport& reply);
  // MoveVm's decision: the VM's UUID once its ledger and cgroups moved.
  Result<std::string> moveVm(const v1::MoveVmRequest& request);
  Result<void> vmDecision(const v1::AdmitVmRequest& request, v1::VmAllocation& reply,
                          Result<VmCpuPlacement> (NodeManager::*decide)(const VmSpec&));
  // PERMISSION_DENIED on the read-only socket.
  Result<void> checkAdmin(const char* method) const;
  // RESOURCE_EXHAUSTED when this socket already serves as many streams as it may.
  grpc::Status streamRefused(const char* method) const;
  // What the ledger views need besides `state` (ledger_views.h).
  LedgerViewFacts viewFacts(const LedgerState& state) const;

  NodeManager& node_;
  SocketAccess access_;
  CallGate& gate_;
  RateLimitedLog& refusals_;
  ClientVersions& clients_;
  LivePinsSlot& livePins_;
  const UsageSampler* usage_;
  CallMetrics* metrics_;
  ConfigControl* config_;
  const Clock& clock_;
  ScanPacer scans_;                                   // the read-only socket's
  const std::unique_ptr<KubeletNamer> kubeletNamer_;  // the node's, for every allocation and pod path answered
  StreamSlots streams_{access_ == SocketAccess::kAdmin ? kMaxAdminStreams : kMaxReadOnlyStreams};
  std::unique_ptr<DecisionQueue> decisions_;  // from startDeciding(); destroyed after pacedScans_
  // The read-only socket's scans wait their turn here (scan_pacer.h), then run on decisions_. Last:
  // destroyed first, so what it runs still finds decisions_.
  WorkerPool pacedScans_{1};
};

}  // namespace vri
