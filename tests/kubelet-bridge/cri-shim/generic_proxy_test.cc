// GenericProxy between a caller and an upstream that are both real gRPC
// servers and clients on unix sockets, with methods no proto declares: unary
// and server-streaming calls, metadata both ways (binary keys included),
// deadlines, cancellation reaching the upstream, a failing status with details
// and 16 MiB messages.
#include "kubelet-bridge/cri-shim/generic_proxy.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "tests/support/eventually.h"
#include "tests/support/generic_call.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using testing::buffer;
using ::testing::ElementsAre;
using testing::GenericCall;
using ::testing::Pair;
using testing::text;

constexpr int kBigBytes = 16 << 20;

// The upstream: methods chosen by name, none declared in any proto.
class Upstream final : public grpc::CallbackGenericService {
 public:
  std::promise<void> cancelled;  // set when a Hang call is cancelled
  std::atomic<int> calls{0};

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    ++calls;
    return new Reactor(*this, context);
  }

 private:
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(Upstream& upstream, grpc::GenericCallbackServerContext* context)
        : upstream_(upstream), method_(context->method()) {
      // Echo the caller's metadata back in both headers and trailers.
      for (const auto& [key, value] : context->client_metadata()) {
        const std::string name(key.data(), key.size());
        if (name.starts_with("x-")) {
          context->AddInitialMetadata(name, std::string(value.data(), value.size()));
          context->AddTrailingMetadata("x-trailer-" + name, std::string(value.data(), value.size()));
        }
      }
      if (method_ == "/vri.test.Unknown/Fail") {
        Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "upstream says no", std::string("\x01\x02", 2)));
        return;
      }
      if (method_ == "/vri.test.Unknown/Deadline") {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(context->deadline() -
                                                                                std::chrono::system_clock::now());
        reply_ = buffer(std::to_string(left.count()));
        StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
        return;
      }
      StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) {
        if (method_ != "/vri.test.Unknown/Hang") Finish(grpc::Status::OK);
        return;
      }
      if (method_ == "/vri.test.Unknown/Stream") {
        left_ = std::stoi(text(request_));
        writeNext();
      } else if (method_ == "/vri.test.Unknown/Echo") {
        reply_ = request_;
        StartWrite(&reply_);
      }
      // Hang: reads, answers nothing, waits to be cancelled.
    }
    void OnWriteDone(bool ok) override {
      if (!ok) return;
      if (method_ == "/vri.test.Unknown/Stream") {
        writeNext();
      } else {
        StartRead(&request_);
      }
    }
    void OnCancel() override {
      if (method_ == "/vri.test.Unknown/Hang") {
        upstream_.cancelled.set_value();
        Finish(grpc::Status::CANCELLED);
      }
    }
    void OnDone() override { delete this; }

   private:
    void writeNext() {
      if (sent_ == left_) {
        Finish(grpc::Status::OK);
        return;
      }
      reply_ = buffer("message " + std::to_string(sent_++));
      StartWrite(&reply_);
    }
    Upstream& upstream_;
    std::string method_;
    grpc::ByteBuffer request_, reply_;
    int left_ = 0, sent_ = 0;
  };
};

std::unique_ptr<grpc::Server> serve(const std::string& socket, grpc::CallbackGenericService& service) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterCallbackGenericService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  return builder.BuildAndStart();
}

std::shared_ptr<grpc::Channel> channel(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
}

class GenericProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    upstreamServer_ = serve(tmp_.sub("upstream.sock"), upstream_);
    ASSERT_TRUE(upstreamServer_);
    proxy_ = std::make_unique<GenericProxy>(channel(tmp_.sub("upstream.sock")));
    proxyServer_ = serve(tmp_.sub("proxy.sock"), *proxy_);
    ASSERT_TRUE(proxyServer_);
    stub_ = std::make_unique<grpc::GenericStub>(channel(tmp_.sub("proxy.sock")));
  }
  void TearDown() override {
    proxyServer_->Shutdown(std::chrono::system_clock::now());
    upstreamServer_->Shutdown(std::chrono::system_clock::now());
  }

  testing::TempDir tmp_;
  Upstream upstream_;
  std::unique_ptr<grpc::Server> upstreamServer_, proxyServer_;
  std::unique_ptr<GenericProxy> proxy_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

TEST_F(GenericProxyTest, AnUnknownUnaryMethodPassesWithItsMetadataBothWays) {
  grpc::ClientContext context;
  context.AddMetadata("x-plain", "hello");
  context.AddMetadata("x-raw-bin", std::string("\x00\xff\x10", 3));
  GenericCall call(*stub_, context, "/vri.test.Unknown/Echo", {"ping"});
  ASSERT_TRUE(call.wait());
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_THAT(call.replies, ElementsAre("ping"));
  EXPECT_THAT(call.headers, ::testing::Contains(Pair("x-plain", "hello")));
  EXPECT_THAT(call.headers, ::testing::Contains(Pair("x-raw-bin", std::string("\x00\xff\x10", 3))));
  EXPECT_THAT(call.trailers, ::testing::Contains(Pair("x-trailer-x-plain", "hello")));
}

TEST_F(GenericProxyTest, AServerStreamPassesEveryMessageInOrder) {
  grpc::ClientContext context;
  GenericCall call(*stub_, context, "/vri.test.Unknown/Stream", {"200"});
  ASSERT_TRUE(call.wait());
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_EQ(call.replies.size(), 200u);
  EXPECT_EQ(call.replies.front(), "message 0");
  EXPECT_EQ(call.replies.back(), "message 199");
}

TEST_F(GenericProxyTest, AFailingStatusComesBackWithItsDetails) {
  grpc::ClientContext context;
  GenericCall call(*stub_, context, "/vri.test.Unknown/Fail", {"x"});
  ASSERT_TRUE(call.wait());
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(call.status.error_message(), "upstream says no");
  EXPECT_EQ(call.status.error_details(), std::string("\x01\x02", 2));
}

TEST_F(GenericProxyTest, TheDeadlineReachesTheUpstream) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(7));
  GenericCall call(*stub_, context, "/vri.test.Unknown/Deadline", {});
  ASSERT_TRUE(call.wait());
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_EQ(call.replies.size(), 1u);
  const int left_ms = std::stoi(call.replies.front());
  EXPECT_GT(left_ms, 5000);
  EXPECT_LE(left_ms, 7100);  // grpc-timeout travels rounded up
}

TEST_F(GenericProxyTest, CancellingTheCallCancelsItUpstreamWithinASecond) {
  grpc::ClientContext context;
  auto cancelled = upstream_.cancelled.get_future();
  GenericCall call(*stub_, context, "/vri.test.Unknown/Hang", {"wait"});
  ASSERT_TRUE(testing::eventually([&] { return upstream_.calls.load() > 0; }));  // the call reached the upstream
  const auto start = std::chrono::steady_clock::now();
  context.TryCancel();
  ASSERT_EQ(cancelled.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  ASSERT_TRUE(call.wait());
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(GenericProxyTest, SixteenMebibyteMessagesPassBothWays) {
  grpc::ClientContext context;
  const std::string big(kBigBytes, 'v');
  GenericCall call(*stub_, context, "/vri.test.Unknown/Echo", {big});
  ASSERT_TRUE(call.wait());
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  ASSERT_EQ(call.replies.size(), 1u);
  EXPECT_EQ(call.replies.front().size(), big.size());
}

// A handled method runs on the proxy's workers: while one blocks there, other
// calls (handled or passed through) go on, and no reaction thread waits.
TEST(GenericProxyHandlersTest, AHandledMethodRunsOnTheWorkersWhileOtherCallsGoOn) {
  testing::TempDir tmp;
  Upstream upstream;
  auto upstream_server = serve(tmp.sub("upstream.sock"), upstream);
  ASSERT_TRUE(upstream_server);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> blocked{0};
  WorkerPool workers(2);
  std::map<std::string, UnaryHandler> handlers;
  handlers["/vri.test.Unknown/Held"] = [&](grpc::GenericCallbackServerContext&, const grpc::ByteBuffer& request,
                                           grpc::ByteBuffer* reply) {
    ++blocked;
    released.wait();
    *reply = buffer("held " + text(request));
    return grpc::Status::OK;
  };
  handlers["/vri.test.Unknown/Refused"] = [](grpc::GenericCallbackServerContext&, const grpc::ByteBuffer&,
                                             grpc::ByteBuffer*) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "no CPU left");
  };
  GenericProxy proxy(channel(tmp.sub("upstream.sock")), handlers, &workers);
  auto proxy_server = serve(tmp.sub("proxy.sock"), proxy);
  ASSERT_TRUE(proxy_server);
  grpc::GenericStub stub(channel(tmp.sub("proxy.sock")));

  grpc::ClientContext held_context;
  GenericCall held(stub, held_context, "/vri.test.Unknown/Held", {"a"});
  ASSERT_TRUE(testing::eventually([&] { return blocked.load() == 1; }));
  EXPECT_EQ(proxy.handledCallsInFlight(), 1);
  // Meanwhile: a pass-through call and another handled one answer.
  grpc::ClientContext echo_context;
  GenericCall echo(stub, echo_context, "/vri.test.Unknown/Echo", {"b"});
  ASSERT_TRUE(echo.wait());
  EXPECT_THAT(echo.replies, ElementsAre("b"));
  grpc::ClientContext refused_context;
  GenericCall refused(stub, refused_context, "/vri.test.Unknown/Refused", {"c"});
  ASSERT_TRUE(refused.wait());
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.status.error_message(), "no CPU left");
  EXPECT_EQ(upstream.calls.load(), 1);  // only the echo reached the upstream

  release.set_value();
  ASSERT_TRUE(held.wait());
  EXPECT_TRUE(held.status.ok());
  EXPECT_THAT(held.replies, ElementsAre("held a"));
  EXPECT_TRUE(testing::eventually([&] { return proxy.handledCallsInFlight() == 0; }));
  proxy_server->Shutdown(std::chrono::system_clock::now());
  upstream_server->Shutdown(std::chrono::system_clock::now());
}

// The proxy's own limit, whatever the server's: a request above it is refused before a handler
// parses it or the upstream sees it, whatever the method.
TEST(GenericProxyLimitTest, ARequestAboveTheLimitIsRefusedBeforeAHandlerOrTheUpstreamSeesIt) {
  testing::TempDir tmp;
  Upstream upstream;
  auto upstream_server = serve(tmp.sub("upstream.sock"), upstream);
  ASSERT_TRUE(upstream_server);
  WorkerPool workers(1);
  std::atomic<int> handled{0};
  std::map<std::string, UnaryHandler> handlers;
  handlers["/vri.test.Unknown/Handled"] = [&](grpc::GenericCallbackServerContext&, const grpc::ByteBuffer& request,
                                              grpc::ByteBuffer* reply) {
    ++handled;
    *reply = request;
    return grpc::Status::OK;
  };
  GenericProxy proxy(channel(tmp.sub("upstream.sock")), handlers, &workers, 1024);
  auto proxy_server = serve(tmp.sub("proxy.sock"), proxy);
  ASSERT_TRUE(proxy_server);
  grpc::GenericStub stub(channel(tmp.sub("proxy.sock")));
  for (const char* method : {"/vri.test.Unknown/Echo", "/vri.test.Unknown/Handled"}) {
    grpc::ClientContext context;
    GenericCall call(stub, context, method, {std::string(1025, 'x')});
    ASSERT_TRUE(call.wait()) << method;
    EXPECT_EQ(call.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << method;
    EXPECT_EQ(call.status.error_message(), "vri-cri-shim: the request is 1025 bytes, more than the 1024 accepted");
    // At the limit, both go through.
    grpc::ClientContext within_context;
    GenericCall within(stub, within_context, method, {std::string(1024, 'y')});
    ASSERT_TRUE(within.wait()) << method;
    EXPECT_TRUE(within.status.ok()) << method << ": " << within.status.error_message();
    EXPECT_THAT(within.replies, ElementsAre(std::string(1024, 'y')));
  }
  // The refused handled call never reached its handler; the refused echo carries the proxy's
  // status and no reply (the upstream, which echoes, never had the message).
  EXPECT_EQ(handled.load(), 1);
  proxy_server->Shutdown(std::chrono::system_clock::now());
  upstream_server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace vri
