#include "kubelet-bridge/cri-shim/generic_proxy.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include <mutex>

#include "base/thread_annotations.h"
#include "kubelet-bridge/upstream_call.h"

namespace vri {

namespace {

class ProxyCall;

// Refused from its size alone, before anything reads it or sends it on.
grpc::Status tooLarge(const grpc::ByteBuffer& message, size_t limit) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "vri-cri-shim: the request is " + std::to_string(message.Length()) + " bytes, more than the " +
                          std::to_string(limit) + " accepted");
}

// The caller's side of one call.
class Downstream final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Downstream(ProxyCall& call) : call_(call) {}
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  ProxyCall& call_;
};

// The upstream's side of the same call.
class Upstream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit Upstream(ProxyCall& call) : call_(call) {}
  void OnReadInitialMetadataDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  ProxyCall& call_;
};

// One forwarded call: its two sides, the message in flight each way, and
// when to finish. Deletes itself once both sides are done. State changes
// happen under the mutex; gRPC operations are started after it is released.
//
// Upstream operations started from the caller's side (a write for each of its
// messages, its half-close, the next read once a reply is written) are not
// reactions of the upstream call, so the upstream call carries a hold until
// they can no longer come: without it the upstream may finish, and be freed,
// between deciding to start one and starting it (containerd answers a unary
// call before the caller's half-close arrives).
class ProxyCall {
 public:
  ProxyCall(grpc::GenericStub& stub, grpc::GenericCallbackServerContext* server, size_t maxRequestBytes)
      // Not linked: the upstream call's context may outlive the caller's call
      // (it goes with the last side done); the caller's cancellation is
      // carried by Downstream::OnCancel.
      : server_(server), client_(upstreamContext(*server, false)), maxRequestBytes_(maxRequestBytes) {
    stub.PrepareBidiStreamingCall(client_.get(), server->method(), grpc::StubOptions(), &up_);
  }

  grpc::ServerGenericBidiReactor* start() {
    up_.AddHold();
    down_.StartRead(&fromClient_);
    up_.StartCall();
    return &down_;
  }

  // The caller sent a message (forward it) or half-closed (forward that).
  void clientMessage(bool ok) {
    if (ok && fromClient_.Length() > maxRequestBytes_) {
      // Not sent on: the upstream call is cancelled and the caller gets this status instead of its.
      {
        MutexLock lock(mutex_);
        refused_ = tooLarge(fromClient_, maxRequestBytes_);
      }
      client_->TryCancel();
      releaseHold();
      return;
    }
    {
      MutexLock lock(mutex_);
      if (!ok && halfClosed_) return;
      if (!ok) halfClosed_ = true;
    }
    if (ok) {
      startUpstream([this] { up_.StartWrite(&fromClient_); });
    } else {
      startUpstream([this] { up_.StartWritesDone(); });
    }
  }
  void upstreamWritten(bool ok) {
    if (ok) {
      down_.StartRead(&fromClient_);
    } else {
      releaseHold();  // the upstream is going: its status follows
    }
  }
  // The upstream's headers go to the caller before its first message.
  void upstreamHeaders(bool ok) {
    if (!ok) {
      releaseHold();  // failed before any header: the status carries everything
      return;
    }
    for (const auto& [key, value] : client_->GetServerInitialMetadata()) {
      const std::string name(key.data(), key.size());
      if (!isReservedMetadataKey(name)) server_->AddInitialMetadata(name, std::string(value.data(), value.size()));
    }
    down_.StartSendInitialMetadata();
    up_.StartRead(&fromUpstream_);
  }
  void upstreamMessage(bool ok) {
    if (!ok) {
      releaseHold();  // no more messages: the status follows
      return;
    }
    {
      MutexLock lock(mutex_);
      writingDown_ = true;
    }
    down_.StartWrite(&fromUpstream_);
  }
  void clientWritten(bool ok) {
    bool read_more = false;
    {
      MutexLock lock(mutex_);
      writingDown_ = false;
      read_more = ok && !upstreamDone_;
    }
    if (!ok) {
      client_->TryCancel();  // the caller is gone
      releaseHold();
    }
    if (read_more) startUpstream([this] { up_.StartRead(&fromUpstream_); });
    finishIfReady();
  }
  void upstreamDone(const grpc::Status& status) {
    {
      MutexLock lock(mutex_);
      upstreamDone_ = true;
      status_ = status;
    }
    finishIfReady();
    sideDone();
  }
  void clientCancelled() { client_->TryCancel(); }
  void clientDone() {
    releaseHold();  // nothing more comes from the caller's side
    sideDone();
  }
  void sideDone() {
    bool last = false;
    {
      MutexLock lock(mutex_);
      last = ++sidesDone_ == 2;
    }
    if (last) delete this;
  }

 private:
  // Starts an upstream operation from the caller's side, unless the hold is
  // gone (the upstream has ended: the operation would be pointless).
  template <typename Start>
  void startUpstream(Start start) {
    {
      MutexLock lock(mutex_);
      if (holdReleasing_) return;
      ++starting_;
    }
    start();
    bool release = false;
    {
      MutexLock lock(mutex_);
      release = --starting_ == 0 && holdReleasing_ && !holdReleased_;
      if (release) holdReleased_ = true;
    }
    if (release) up_.RemoveHold();
  }
  // No more upstream operations from the caller's side: once those being
  // started are, the upstream may finish. Once only.
  void releaseHold() {
    bool release = false;
    {
      MutexLock lock(mutex_);
      if (holdReleasing_) return;
      holdReleasing_ = true;
      release = starting_ == 0;
      if (release) holdReleased_ = true;
    }
    if (release) up_.RemoveHold();
  }
  // Finish only once the upstream is done and the last message has been written to the caller.
  void finishIfReady() {
    grpc::Status status;
    {
      MutexLock lock(mutex_);
      if (!upstreamDone_ || writingDown_ || finished_) return;
      finished_ = true;
      status = refused_.ok() ? status_ : refused_;
    }
    for (const auto& [key, value] : client_->GetServerTrailingMetadata()) {
      const std::string name(key.data(), key.size());
      if (!isReservedMetadataKey(name)) server_->AddTrailingMetadata(name, std::string(value.data(), value.size()));
    }
    down_.Finish(status);
  }

  grpc::GenericCallbackServerContext* server_;
  std::unique_ptr<grpc::ClientContext> client_;
  Downstream down_{*this};
  Upstream up_{*this};
  grpc::ByteBuffer fromClient_, fromUpstream_;
  const size_t maxRequestBytes_;
  Mutex mutex_;
  bool halfClosed_ VRI_GUARDED_BY(mutex_) = false;   // the caller's half-close was forwarded
  bool writingDown_ VRI_GUARDED_BY(mutex_) = false;  // a message to the caller is in flight
  bool upstreamDone_ VRI_GUARDED_BY(mutex_) = false;
  bool finished_ VRI_GUARDED_BY(mutex_) = false;  // the caller has been given the status
  int starting_ VRI_GUARDED_BY(mutex_) = 0;       // upstream operations being started from the caller's side
  bool holdReleasing_ VRI_GUARDED_BY(mutex_) = false;
  bool holdReleased_ VRI_GUARDED_BY(mutex_) = false;
  grpc::Status status_ VRI_GUARDED_BY(mutex_);
  grpc::Status refused_ VRI_GUARDED_BY(mutex_);  // not OK: what the caller gets, whatever the upstream said
  int sidesDone_ VRI_GUARDED_BY(mutex_) = 0;
};

void Downstream::OnReadDone(bool ok) { call_.clientMessage(ok); }
void Downstream::OnWriteDone(bool ok) { call_.clientWritten(ok); }
void Downstream::OnCancel() { call_.clientCancelled(); }
void Downstream::OnDone() { call_.clientDone(); }
void Upstream::OnReadInitialMetadataDone(bool ok) { call_.upstreamHeaders(ok); }
void Upstream::OnReadDone(bool ok) { call_.upstreamMessage(ok); }
void Upstream::OnWriteDone(bool ok) { call_.upstreamWritten(ok); }
void Upstream::OnDone(const grpc::Status& status) { call_.upstreamDone(status); }

// A unary call the proxy handles itself: its one request is read, the handler
// runs on a worker (it may block), and the reply or status goes back.
class HandledCall final : public grpc::ServerGenericBidiReactor {
 public:
  HandledCall(grpc::GenericCallbackServerContext* context, const UnaryHandler& handler, WorkerPool& workers,
              CallsInFlight& inFlight, size_t maxRequestBytes)
      : context_(*context),
        handler_(handler),
        workers_(workers),
        inFlight_(inFlight),
        maxRequestBytes_(maxRequestBytes) {
    inFlight_.enter();
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request message"));
      return;
    }
    if (request_.Length() > maxRequestBytes_) {
      Finish(tooLarge(request_, maxRequestBytes_));
      return;
    }
    workers_.post([this] {
      const grpc::Status status = handler_(context_, request_, &reply_);
      if (status.ok()) {
        StartWriteAndFinish(&reply_, grpc::WriteOptions(), status);
      } else {
        Finish(status);
      }
    });
  }
  void OnDone() override {
    inFlight_.leave();
    delete this;
  }

 private:
  grpc::GenericCallbackServerContext& context_;
  const UnaryHandler& handler_;
  WorkerPool& workers_;
  CallsInFlight& inFlight_;
  const size_t maxRequestBytes_;
  grpc::ByteBuffer request_, reply_;
};

}  // namespace

GenericProxy::GenericProxy(std::shared_ptr<grpc::Channel> upstream, std::map<std::string, UnaryHandler> handlers,
                           WorkerPool* workers, size_t maxRequestBytes)
    : stub_(std::move(upstream)),
      handlers_(std::move(handlers)),
      workers_(workers),
      maxRequestBytes_(maxRequestBytes) {}

grpc::ServerGenericBidiReactor* GenericProxy::CreateReactor(grpc::GenericCallbackServerContext* context) {
  if (workers_ != nullptr) {
    if (const auto handled = handlers_.find(context->method()); handled != handlers_.end())
      return new HandledCall(context, handled->second, *workers_, handledInFlight_, maxRequestBytes_);
  }
  return (new ProxyCall(stub_, context, maxRequestBytes_))->start();
}

}  // namespace vri
