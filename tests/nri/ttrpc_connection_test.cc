// One NRI socket's plugin side against a runtime peer on a real socketpair: the runtime's requests
// answered by the handler, the plugin's calls answered by the runtime, both at once, deadlines,
// and bad bytes, which close the connection with a log line and never crash it.
#include "nri/ttrpc_connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/eventually.h"
#include "tests/support/nri_runtime_peer.h"

namespace vri::nri {
namespace {

using ::testing::HasSubstr;

constexpr char kPlugin[] = "nri.pkg.api.v1alpha1.Plugin";
constexpr char kRuntime[] = "nri.pkg.api.v1alpha1.Runtime";

class TtrpcConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    peer_ = std::make_unique<testing::NriRuntimePeer>(fds[1]);
    connection_ = std::make_unique<TtrpcConnection>(
        fds[0],
        [this](const std::string& service, const std::string& method, const std::string& payload,
               const TtrpcConnection::RequestTime& time) { return handler_(service, method, payload, time); },
        [this](const std::string& line) {
          std::lock_guard lock(logMutex_);
          log_ += line + "\n";
        });
  }
  std::string log() {
    std::lock_guard lock(logMutex_);
    return log_;
  }
  ttrpc::Response responseOn(uint32_t stream) {
    auto got = peer_->next();
    EXPECT_TRUE(got.has_value());
    ttrpc::Response response;
    if (!got) return response;
    EXPECT_EQ(got->conn, kPluginServiceConn);
    EXPECT_EQ(got->message.type, TtrpcType::kResponse);
    EXPECT_EQ(got->message.streamId, stream);
    EXPECT_TRUE(response.ParseFromString(got->message.payload));
    return response;
  }

  TtrpcConnection::Handler handler_ = [](const std::string& service, const std::string& method,
                                         const std::string& payload,
                                         const TtrpcConnection::RequestTime& time) -> Result<std::string> {
    if (method == "Refuse") return Error::failedPrecondition("not now");
    if (method == "Timeout") return std::to_string(time.timeout.count()) + " ns";
    return service + "/" + method + ":" + payload;
  };
  std::unique_ptr<testing::NriRuntimePeer> peer_;
  std::mutex logMutex_;
  std::string log_;
  std::unique_ptr<TtrpcConnection> connection_;  // last: its threads end before the rest goes
};

TEST_F(TtrpcConnectionTest, TheRuntimesRequestsAreAnsweredOnTheirStreamsInOrder) {
  ASSERT_TRUE(peer_->request(1, kPlugin, "Configure", "a"));
  ASSERT_TRUE(peer_->request(3, kPlugin, "Refuse", ""));
  ASSERT_TRUE(peer_->request(5, kPlugin, "Synchronize", std::string(10000, 's')));  // past one frame
  EXPECT_EQ(responseOn(1).payload(), std::string(kPlugin) + "/Configure:a");
  const ttrpc::Response refused = responseOn(3);
  EXPECT_EQ(refused.status().code(), 9);  // FAILED_PRECONDITION, as gRPC numbers it
  EXPECT_EQ(refused.status().message(), "not now");
  EXPECT_EQ(responseOn(5).payload(), std::string(kPlugin) + "/Synchronize:" + std::string(10000, 's'));
}

TEST_F(TtrpcConnectionTest, TheHandlerIsGivenTheTimeTheRuntimeGivesTheRequest) {
  ASSERT_TRUE(peer_->request(1, kPlugin, "Timeout", "", std::chrono::seconds(2)));
  ASSERT_TRUE(peer_->request(3, kPlugin, "Timeout", ""));
  ASSERT_TRUE(peer_->request(5, kPlugin, "Timeout", "", std::chrono::nanoseconds(-5)));  // nonsense: none
  EXPECT_EQ(responseOn(1).payload(), "2000000000 ns");
  EXPECT_EQ(responseOn(3).payload(), "0 ns");
  EXPECT_EQ(responseOn(5).payload(), "0 ns");
}

// A request that waited behind a slow one is handed the time it arrived, so that its own time is
// counted from then, not from when its turn came.
TEST_F(TtrpcConnectionTest, ARequestThatWaitedIsHandedTheTimeItArrived) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::mutex seenMutex;
  std::map<std::string, std::chrono::steady_clock::time_point> received;
  std::promise<void> slowStarted;
  handler_ = [&](const std::string&, const std::string& method, const std::string&,
                 const TtrpcConnection::RequestTime& time) -> Result<std::string> {
    if (method == "Slow") {
      slowStarted.set_value();
      released.wait();
    }
    std::lock_guard lock(seenMutex);
    received[method] = time.received;
    return std::string("ok");
  };
  ASSERT_TRUE(peer_->request(1, kPlugin, "Slow", ""));
  slowStarted.get_future().wait();
  ASSERT_TRUE(peer_->request(3, kPlugin, "Waiting", ""));
  // It waits in the queue behind the slow one; its turn comes only once that is released.
  ASSERT_TRUE(testing::eventually([&] { return connection_->queuedRequests() == 1; }, std::chrono::seconds(10)));
  const auto turnCame = std::chrono::steady_clock::now();
  release.set_value();
  EXPECT_EQ(responseOn(1).payload(), "ok");
  EXPECT_EQ(responseOn(3).payload(), "ok");
  std::lock_guard lock(seenMutex);
  EXPECT_LT(received["Waiting"], turnCame) << "counted from its turn, not its arrival";
}

// A runtime that sends more than the plugin can queue gets RESOURCE_EXHAUSTED for the excess at
// once; the plugin's memory stays bounded and what was queued is answered.
TEST_F(TtrpcConnectionTest, RequestsBeyondTheQueuesBoundAreRefusedAtOnce) {
  std::promise<void> release, slowStarted;
  std::shared_future<void> released = release.get_future().share();
  handler_ = [released, &slowStarted](const std::string&, const std::string& method, const std::string&,
                                      const TtrpcConnection::RequestTime&) -> Result<std::string> {
    if (method == "Slow") {
      slowStarted.set_value();
      released.wait();
    }
    return std::string("ok");
  };
  ASSERT_TRUE(peer_->request(1, kPlugin, "Slow", ""));
  slowStarted.get_future().wait();  // taken by the handler: the queue is then empty
  const size_t sent = TtrpcConnection::kMaxQueuedRequests + 10;
  for (uint32_t i = 0; i < sent; ++i) ASSERT_TRUE(peer_->request(3 + 2 * i, kPlugin, "Queued", ""));
  // The excess is answered while the handler is still busy with the first.
  std::set<uint32_t> refused;
  for (size_t i = 0; i < 10; ++i) {
    auto got = peer_->next();
    ASSERT_TRUE(got.has_value()) << "refusal " << i;
    ttrpc::Response response;
    ASSERT_TRUE(response.ParseFromString(got->message.payload));
    EXPECT_EQ(response.status().code(), 8);  // RESOURCE_EXHAUSTED
    EXPECT_THAT(response.status().message(), HasSubstr("waiting already"));
    refused.insert(got->message.streamId);
  }
  EXPECT_EQ(*refused.begin(), 3 + 2 * TtrpcConnection::kMaxQueuedRequests) << "the last ones are refused";
  release.set_value();
  EXPECT_EQ(responseOn(1).payload(), "ok");
  for (uint32_t i = 0; i < TtrpcConnection::kMaxQueuedRequests; ++i) EXPECT_EQ(responseOn(3 + 2 * i).payload(), "ok");
  EXPECT_FALSE(connection_->closed());
}

TEST_F(TtrpcConnectionTest, ThePluginsCallsGoOnOddStreamsAndGetTheRuntimesAnswer) {
  auto first = std::async(std::launch::async, [&] {
    return connection_->call(kRuntime, "RegisterPlugin", "reg", std::chrono::seconds(5));
  });
  auto sent = peer_->next();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->conn, kRuntimeServiceConn);
  EXPECT_EQ(sent->message.streamId, 1u);
  ttrpc::Request request;
  ASSERT_TRUE(request.ParseFromString(sent->message.payload));
  EXPECT_EQ(request.service(), kRuntime);
  EXPECT_EQ(request.method(), "RegisterPlugin");
  EXPECT_EQ(request.payload(), "reg");
  EXPECT_GT(request.timeout_nano(), 0);
  ASSERT_TRUE(peer_->respond(1, "ok"));
  auto reply = first.get();
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ(*reply, "ok");

  auto second = std::async(
      std::launch::async, [&] { return connection_->call(kRuntime, "UpdateContainers", "", std::chrono::seconds(5)); });
  sent = peer_->next();
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->message.streamId, 3u);
  ASSERT_TRUE(peer_->respond(3, "", 8, "too many"));
  auto refused = second.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ(refused.error().message(), "too many");
}

TEST_F(TtrpcConnectionTest, AHandlerMayCallTheRuntimeWhileItAnswers) {
  handler_ = [this](const std::string&, const std::string&, const std::string&,
                    const TtrpcConnection::RequestTime&) -> Result<std::string> {
    return connection_->call(kRuntime, "UpdateContainers", "", std::chrono::seconds(5));
  };
  ASSERT_TRUE(peer_->request(1, kPlugin, "Synchronize", ""));
  auto call = peer_->next();  // the handler's call, before any answer to the request
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->conn, kRuntimeServiceConn);
  ASSERT_TRUE(peer_->respond(call->message.streamId, "updated"));
  EXPECT_EQ(responseOn(1).payload(), "updated");
}

TEST_F(TtrpcConnectionTest, ACallPastItsDeadlineFailsAndItsLateReplyIsDropped) {
  auto late = connection_->call(kRuntime, "RegisterPlugin", "", std::chrono::milliseconds(100));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), ErrorCode::kDeadlineExceeded);
  ASSERT_TRUE(peer_->next().has_value());
  ASSERT_TRUE(peer_->respond(1, "late"));
  // Still open: the next call is answered as usual.
  auto next = std::async(std::launch::async,
                         [&] { return connection_->call(kRuntime, "RegisterPlugin", "", std::chrono::seconds(5)); });
  auto sent = peer_->next();
  ASSERT_TRUE(sent.has_value());
  ASSERT_TRUE(peer_->respond(sent->message.streamId, "on time"));
  EXPECT_EQ(next.get().value(), "on time");
  EXPECT_FALSE(connection_->closed());
}

TEST_F(TtrpcConnectionTest, BadBytesCloseTheConnectionWithALogLine) {
  struct Case {
    std::string bytes;
    std::string logged;
  };
  const std::vector<Case> cases = {
      {std::string("\0\0\0\0\0\0\0\1x", 9), "reserved connection 0"},
      {std::string("\0\0\0\1\xff\xff\xff\xff", 8), "past the limit"},
      {encodeMuxFrames(kPluginServiceConn, std::string("\0\0\0\0\0\0\0\1\x07\0", 10)), "type 7"},
      {encodeMuxFrames(kPluginServiceConn, *encodeTtrpc({1, TtrpcType::kRequest, 0, "\xff\xff"})), "does not parse"},
      {encodeMuxFrames(kPluginServiceConn, *encodeTtrpc({1, TtrpcType::kResponse, 0, ""})), "takes requests only"},
      {encodeMuxFrames(kRuntimeServiceConn, *encodeTtrpc({1, TtrpcType::kResponse, 0, "\x0a"})), "does not parse"},
  };
  for (const Case& c : cases) {
    SetUp();  // a fresh connection and peer for each
    ASSERT_TRUE(peer_->writeRaw(c.bytes));
    EXPECT_TRUE(connection_->waitClosed(std::chrono::seconds(5))) << c.logged;
    EXPECT_THAT(log(), HasSubstr(c.logged));
    EXPECT_TRUE(peer_->closedByPlugin()) << c.logged;
    auto call = connection_->call(kRuntime, "RegisterPlugin", "", std::chrono::seconds(1));
    ASSERT_FALSE(call.ok());
    EXPECT_EQ(call.error().code(), ErrorCode::kUnavailable);
  }
}

TEST_F(TtrpcConnectionTest, TheRuntimeGoingAwayClosesItAndFailsTheCallInFlight) {
  auto pending = std::async(
      std::launch::async, [&] { return connection_->call(kRuntime, "RegisterPlugin", "", std::chrono::seconds(10)); });
  ASSERT_TRUE(peer_->next().has_value());
  peer_.reset();  // the runtime's end closes
  auto call = pending.get();
  ASSERT_FALSE(call.ok());
  EXPECT_EQ(call.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(connection_->waitClosed(std::chrono::seconds(5)));
  EXPECT_THAT(log(), HasSubstr("the runtime closed it"));
}

// Deferred work runs between requests, a step at a time: a request is answered while the work
// still has steps left, and work that says it is done is asked again only after the next request.
TEST(TtrpcConnectionIdleTest, IdleStepsRunBetweenRequestsAndNeverStarveThem) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  testing::NriRuntimePeer peer(fds[1]);
  std::atomic<int> steps{0}, done{0};  // steps taken; steps that said the work is done
  std::atomic<bool> endless{true};
  TtrpcConnection connection(
      fds[0],
      [](const std::string&, const std::string& method, const std::string&,
         const TtrpcConnection::RequestTime&) -> Result<std::string> { return method; },
      [](const std::string&) {},
      [&] {
        ++steps;
        const bool more = endless.load();
        if (!more) ++done;
        return more;
      });
  ASSERT_TRUE(testing::eventually([&] { return steps > 100; }));
  ASSERT_TRUE(peer.request(1, kPlugin, "Configure", ""));
  auto answered = peer.next();
  ASSERT_TRUE(answered.has_value()) << "a request starved by endless idle steps";
  EXPECT_EQ(answered->message.streamId, 1u);

  endless = false;
  ASSERT_TRUE(testing::eventually([&] { return done == 1; }));
  const int before = steps;
  // One step after each request (it may have made work), then none until the next one.
  for (uint32_t stream : {3u, 5u}) {
    ASSERT_TRUE(peer.request(stream, kPlugin, "Synchronize", ""));
    ASSERT_TRUE(peer.next().has_value());
    EXPECT_TRUE(testing::eventually([&] { return done == static_cast<int>(stream + 1) / 2; }));
  }
  EXPECT_EQ(steps, before + 2);
}

}  // namespace
}  // namespace vri::nri
