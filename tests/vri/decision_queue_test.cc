// The decision thread's queue on a real gRPC server's completion queue: posted work runs on one
// thread of its own, in the order posted; stopping runs what is still posted; work posted once it
// has stopped runs at once on the caller's thread.
#include "vri/decision_queue.h"

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace vri {
namespace {

// A server with no port: its completion queue is all the queue needs.
struct QueueOnServer {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<DecisionQueue> queue;
  QueueOnServer() {
    grpc::ServerBuilder builder;
    std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
    server = builder.BuildAndStart();
    queue = std::make_unique<DecisionQueue>(std::move(cq));
  }
  void stop() {
    server->Shutdown();
    queue->stop();
  }
  ~QueueOnServer() {
    server->Shutdown();
    queue.reset();
  }
};

TEST(DecisionQueueTest, PostedWorkRunsOnOneThreadOfItsOwnInTheOrderPosted) {
  QueueOnServer q;
  ASSERT_TRUE(q.server);
  constexpr int kPerPoster = 2000;
  std::mutex mutex;
  std::vector<std::pair<int, int>> ran;  // (poster, sequence)
  std::vector<std::thread::id> threads;
  const auto poster = [&](int which) {
    for (int i = 0; i < kPerPoster; ++i) {
      q.queue->post([&, which, i] {
        std::lock_guard<std::mutex> lock(mutex);
        ran.emplace_back(which, i);
        threads.push_back(std::this_thread::get_id());
      });
    }
  };
  std::thread first(poster, 0), second(poster, 1);
  const std::thread::id firstId = first.get_id(), secondId = second.get_id();
  first.join();
  second.join();
  std::promise<void> drained;
  q.queue->post([&] { drained.set_value(); });
  ASSERT_EQ(drained.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);

  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(ran.size(), 2u * kPerPoster);
  int next[2] = {0, 0};
  for (const auto& [which, i] : ran) {
    ASSERT_EQ(i, next[which]) << "poster " << which << "'s work out of order";
    ++next[which];
  }
  for (const std::thread::id& id : threads) {
    EXPECT_EQ(id, threads.front());
    EXPECT_NE(id, firstId);
    EXPECT_NE(id, secondId);
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

TEST(DecisionQueueTest, StoppingRunsWhatIsStillPostedAndLaterWorkRunsAtOnceOnTheCaller) {
  QueueOnServer q;
  ASSERT_TRUE(q.server);
  // The first job holds the thread until everything else is posted: the rest waits in the queue.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  int done = 0;  // only the decision thread writes it until stop() returns
  q.queue->post([released] { released.wait(); });
  for (int i = 0; i < 100; ++i) q.queue->post([&done] { ++done; });
  std::thread stopping([&] { q.stop(); });
  release.set_value();
  stopping.join();
  EXPECT_EQ(done, 100);

  std::thread::id ranOn;
  q.queue->post([&] { ranOn = std::this_thread::get_id(); });
  EXPECT_EQ(ranOn, std::this_thread::get_id());
  q.queue->stop();  // twice: nothing more
}

}  // namespace
}  // namespace vri
