// VriService's deciding calls, served on the decision thread (decision_queue.h): gRPC matches each
// arriving call with the method's waiting QueuedCall and hands it to the decision thread, which asks
// for the method's next call, decides this one and sends its reply. The reply's completion comes
// back to the same thread, which then lets the call go.
#include "proto/grpc_bytes.h"
#include "proto/grpc_status.h"
#include "vri/vri_service.h"

namespace vri {

// One deciding method: how to ask gRPC for its next call, and how to decide one.
struct VriService::QueuedMethod {
  using Ask = void (VriService::*)(grpc::ServerContext*, grpc::ByteBuffer*,
                                   grpc::ServerAsyncResponseWriter<grpc::ByteBuffer>*, grpc::CompletionQueue*,
                                   grpc::ServerCompletionQueue*, void*);
  using Decide = grpc::Status (VriService::*)(const char*, grpc::ServerContext&, const grpc::ByteBuffer&,
                                              grpc::ByteBuffer&);
  const char* name;
  Ask ask;
  Decide decide;
};

// One call of one method, from the moment gRPC is asked for it until its reply is sent.
class VriService::QueuedCall final : public DecisionQueue::Tag {
 public:
  QueuedCall(VriService& service, const QueuedMethod& method) : service_(service), method_(method) {
    (service_.*method_.ask)(&context_, &request_, &responder_, service_.decisions_->completionQueue(),
                            service_.decisions_->completionQueue(), static_cast<DecisionQueue::Tag*>(this));
  }

  void proceed(bool ok) override {
    // The reply sent (or the call gone), or the server shut down before a call came.
    if (replying_ || !ok) {
      delete this;
      return;
    }
    service_.awaitNext(method_);
    const grpc::Status status = (service_.*method_.decide)(method_.name, context_, request_, reply_);
    replying_ = true;
    if (status.ok()) {
      responder_.Finish(reply_, status, static_cast<DecisionQueue::Tag*>(this));
    } else {
      responder_.FinishWithError(status, static_cast<DecisionQueue::Tag*>(this));
    }
  }

 private:
  VriService& service_;
  const QueuedMethod& method_;
  grpc::ServerContext context_;
  grpc::ByteBuffer request_, reply_;
  grpc::ServerAsyncResponseWriter<grpc::ByteBuffer> responder_{&context_};
  bool replying_ = false;
};

template <typename Request, typename Reply, Result<void> (VriService::*call)(const Request&, Reply&)>
grpc::Status VriService::decideQueued(const char* method, grpc::ServerContext& context, const grpc::ByteBuffer& in,
                                      grpc::ByteBuffer& out) {
  // Counted from when the decision thread takes the call up: how long it waited in gRPC's queue
  // before that is not seen here (the clients' own figures hold it).
  const auto started = std::chrono::steady_clock::now();
  const std::string agent = callerAgent(context);
  grpc::Status status;
  bool closing = false;  // answered as vrid's absence is, and not a refusal worth a line
  Request request;
  if (!fromBytes(in, request)) {
    status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(method) + ": the request does not parse as " +
                                                                  Request::descriptor()->full_name());
  } else if (auto admin = checkAdmin(method); !admin.ok()) {
    status = toGrpcStatus(admin.error());
  } else if (!gate_.enter()) {
    status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "vrid is shutting down");
    closing = true;
  } else {
    Reply reply;
    const Result<void> done = (this->*call)(request, reply);
    status = replied(done, reply, out);
    gate_.leave();
  }
  if (!status.ok() && !closing) logRefusal(method, status);
  account(method, agent, Runs::kDecides, status, started);
  return status;
}

const std::vector<VriService::QueuedMethod>& VriService::queuedMethods() {
  static const std::vector<QueuedMethod> methods = {
      {"AdmitPod", &VriService::RequestAdmitPod,
       &VriService::decideQueued<v1::AdmitPodRequest, v1::PodAllocation, &VriService::admitPod>},
      {"AdmitContainer", &VriService::RequestAdmitContainer,
       &VriService::decideQueued<v1::AdmitContainerRequest, v1::ContainerAllocation, &VriService::admitContainer>},
      {"ResizeContainer", &VriService::RequestResizeContainer,
       &VriService::decideQueued<v1::AdmitContainerRequest, v1::ContainerAllocation, &VriService::resizeContainer>},
      {"ReleaseContainer", &VriService::RequestReleaseContainer,
       &VriService::decideQueued<v1::ReleaseContainerRequest, v1::Released, &VriService::releaseContainer>},
      {"ReleasePod", &VriService::RequestReleasePod,
       &VriService::decideQueued<v1::ReleasePodRequest, v1::Released, &VriService::releasePod>},
      {"ContainerStarted", &VriService::RequestContainerStarted,
       &VriService::decideQueued<v1::ContainerStartedRequest, v1::ContainerStartedReply,
                                 &VriService::containerStarted>},
      {"AdmitVm", &VriService::RequestAdmitVm,
       &VriService::decideQueued<v1::AdmitVmRequest, v1::VmAllocation, &VriService::admitVm>},
      {"ReserveVm", &VriService::RequestReserveVm,
       &VriService::decideQueued<v1::AdmitVmRequest, v1::VmAllocation, &VriService::reserveVm>},
      {"ResizeVm", &VriService::RequestResizeVm,
       &VriService::decideQueued<v1::AdmitVmRequest, v1::VmAllocation, &VriService::resizeVm>},
      {"VmStarted", &VriService::RequestVmStarted,
       &VriService::decideQueued<v1::VmStartedRequest, v1::VmStartedReply, &VriService::vmStarted>},
      {"ReleaseVm", &VriService::RequestReleaseVm,
       &VriService::decideQueued<v1::ReleaseVmRequest, v1::Released, &VriService::releaseVm>},
      {"HandBack", &VriService::RequestHandBack,
       &VriService::decideQueued<v1::HandBackRequest, v1::HandBackReply, &VriService::handBack>},
      // On the decision thread, so that the plan is made against a state no decision is changing.
      {"DiffConfig", &VriService::RequestDiffConfig,
       &VriService::decideQueued<v1::DiffConfigRequest, v1::ConfigDiffReply, &VriService::diffConfig>},
      // An apply is a decision (several, as one transaction).
      {"ApplyConfig", &VriService::RequestApplyConfig,
       &VriService::decideQueued<v1::ApplyConfigRequest, v1::ConfigDiffReply, &VriService::applyConfig>},
  };
  return methods;
}

void VriService::awaitNext(const QueuedMethod& method) { new QueuedCall(*this, method); }

void VriService::startDeciding(std::unique_ptr<grpc::ServerCompletionQueue> queue) {
  decisions_ = std::make_unique<DecisionQueue>(std::move(queue));
  for (const QueuedMethod& method : queuedMethods()) awaitNext(method);
}

void VriService::stopDeciding() {
  if (decisions_) decisions_->stop();
}

}  // namespace vri
