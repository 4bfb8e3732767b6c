// connectToVrid: VridApi over gRPC, with errors that tell an operator what to do.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/version.h"
#include "proto/grpc_status.h"
#include "proto/unix_channel.h"
#include "proto/vri.grpc.pb.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

namespace {

// Reads answer at once; a scan waits for the decisions queued before it.
constexpr auto kCallTimeout = std::chrono::seconds(10);

class GrpcVrid final : public VridApi {
 public:
  explicit GrpcVrid(std::string socket) : socket_(std::move(socket)) {
    stub_ = v1::Vri::NewStub(unixChannel(socket_, {.program = "vrictl"}));
  }

  Result<v1::Node> node() override {
    return unary<v1::Node>([&](grpc::ClientContext* c, v1::Node* out) { return stub_->GetNode(c, {}, out); });
  }
  Result<v1::TenantList> tenants(v1::ListTenantsRequest::Kind kind) override {
    v1::ListTenantsRequest request;
    request.set_kind(kind);
    return unary<v1::TenantList>(
        [&](grpc::ClientContext* c, v1::TenantList* out) { return stub_->ListTenants(c, request, out); });
  }
  Result<v1::Tenant> tenant(const v1::GetTenantRequest& request) override {
    return unary<v1::Tenant>(
        [&](grpc::ClientContext* c, v1::Tenant* out) { return stub_->GetTenant(c, request, out); });
  }
  Result<v1::CgroupTree> tree(bool compareKernel) override {
    v1::GetTreeRequest request;
    request.set_compare_kernel(compareKernel);
    return unary<v1::CgroupTree>(
        [&](grpc::ClientContext* c, v1::CgroupTree* out) { return stub_->GetTree(c, request, out); });
  }
  Result<v1::ReconcileReply> reconcile(bool dryRun) override {
    v1::ReconcileRequest request;
    request.set_dry_run(dryRun);
    return unary<v1::ReconcileReply>(
        [&](grpc::ClientContext* c, v1::ReconcileReply* out) { return stub_->Reconcile(c, request, out); });
  }
  Result<v1::MoveVmReply> moveVm(const v1::MoveVmRequest& request) override {
    return unary<v1::MoveVmReply>(
        [&](grpc::ClientContext* c, v1::MoveVmReply* out) { return stub_->MoveVm(c, request, out); });
  }
  Result<v1::ConfigDiffReply> diffConfig(const v1::DiffConfigRequest& request) override {
    return unary<v1::ConfigDiffReply>(
        [&](grpc::ClientContext* c, v1::ConfigDiffReply* out) { return stub_->DiffConfig(c, request, out); });
  }
  Result<v1::ConfigDiffReply> applyConfig(const v1::ApplyConfigRequest& request) override {
    return unary<v1::ConfigDiffReply>(
        [&](grpc::ClientContext* c, v1::ConfigDiffReply* out) { return stub_->ApplyConfig(c, request, out); });
  }
  Result<v1::HandBackReply> handBack(const v1::HandBackRequest& request) override {
    return unary<v1::HandBackReply>(
        [&](grpc::ClientContext* c, v1::HandBackReply* out) { return stub_->HandBack(c, request, out); });
  }
  Result<v1::UsageReport> usage(unsigned history) override {
    v1::GetUsageRequest request;
    request.set_history(history);
    return unary<v1::UsageReport>(
        [&](grpc::ClientContext* c, v1::UsageReport* out) { return stub_->GetUsage(c, request, out); });
  }
  Result<void> watchUsage(const std::function<bool(const v1::UsageReport&)>& each,
                          const std::function<bool()>& stop) override {
    grpc::ClientContext context;
    return follow<v1::UsageReport>(context, stub_->WatchUsage(&context, {}), each, stop);
  }
  Result<void> watch(const v1::WatchRequest& request, const std::function<bool(const v1::Event&)>& each,
                     const std::function<bool()>& stop) override {
    grpc::ClientContext context;
    if (request.recent_only()) context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    return follow<v1::Event>(context, stub_->Watch(&context, request), each, stop);
  }

 private:
  // Reads a stream until `each` returns false, the stream ends, or `stop` says so.
  template <typename Message>
  Result<void> follow(grpc::ClientContext& context, std::unique_ptr<grpc::ClientReader<Message>> reader,
                      const std::function<bool(const Message&)>& each, const std::function<bool()>& stop) {
    // Read() blocks until an event comes: a second thread cancels the stream when asked to stop.
    std::mutex mutex;
    std::condition_variable done_changed;
    bool done = false, stopped = false;
    std::thread stopper([&] {
      std::unique_lock lock(mutex);
      while (!done) {
        if (done_changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return done; })) break;
        if (stop()) {
          stopped = true;
          context.TryCancel();
          break;
        }
      }
    });
    Message message;
    bool more = true;
    while (more && reader->Read(&message)) more = each(message);
    if (!more) context.TryCancel();
    {
      std::lock_guard lock(mutex);
      done = true;
    }
    done_changed.notify_all();
    stopper.join();
    const grpc::Status status = reader->Finish();
    if (!status.ok() && more && !stopped) return explain(status);
    return {};
  }

  template <typename Reply, typename Call>
  Result<Reply> unary(Call call) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
    Reply reply;
    const grpc::Status status = call(&context, &reply);
    if (!status.ok()) return explain(status);
    return reply;
  }

  // An unreachable socket says why: most often a user who may not open it.
  Error explain(const grpc::Status& status) const {
    const bool unreachable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                             (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
                              status.error_message().find("connect") != std::string::npos);
    if (unreachable && ::access(socket_.c_str(), W_OK) != 0 && errno == EACCES) {
      return Error(ErrorCode::kUnavailable,
                   socket_ +
                       " is not open to this user: vrid's sockets are root's, and the read-only one also "
                       "its socket_group's when vrid.conf names one");
    }
    if (unreachable)
      return Error(ErrorCode::kUnavailable, "cannot reach vrid at unix:" + socket_ + ": " + status.error_message());
    return fromGrpcStatus(status);
  }

  std::string socket_;
  std::unique_ptr<v1::Vri::Stub> stub_;
};

}  // namespace

std::unique_ptr<VridApi> connectToVrid(const std::string& socketPath) { return std::make_unique<GrpcVrid>(socketPath); }

}  // namespace vri::ctl
