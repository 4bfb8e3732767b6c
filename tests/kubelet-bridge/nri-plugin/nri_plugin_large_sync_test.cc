// A Synchronize whose ledger sync does not fit in its answer's time: answered in time, the rest
// adopted between the runtime's requests; a pod a request names is adopted first, and one the
// runtime removes meanwhile is not adopted at all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "tests/kubelet-bridge/nri-plugin/nri_plugin_fixture.h"
#include "tests/support/eventually.h"

namespace vri {
namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using ::testing::HasSubstr;
using testing::kPlugin;
using ::testing::Not;
using testing::NriPluginTest;
using testing::nriPod;

std::string podUid(int n) { return "0b1c2d3e-0000-4000-8000-0000000000" + std::to_string(n); }
std::string sandboxOf(int n) { return "sb" + std::to_string(n); }

// Where in vrid's AdmitPod calls so far the sandbox's came; -1 when it has not.
int admitIndex(const testing::FakeVrid& vrid, const std::string& sandbox) {
  const auto admits = vrid.podAdmits();
  for (size_t i = 0; i < admits.size(); ++i) {
    if (admits[i].sandbox_id() == sandbox) return static_cast<int>(i);
  }
  return -1;
}

TEST_F(NriPluginTest, ASynchronizeLargerThanItsTimeIsAnsweredInTimeAndTheRestAdoptedAfter) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  const uint32_t registering = registration(*runtime, configured);
  // 60 pods vrid does not know, 20 ms each to adopt: 1.2 s, where the answer has 200 ms (half the
  // runtime's 400) and the ledger sync three quarters of that.
  constexpr int kFirst = 10, kLast = 69;
  vrid_.slowPodAdmits(std::chrono::milliseconds(20));
  api::SynchronizeRequest report;
  for (int n = kFirst; n <= kLast; ++n) *report.add_pods() = nriPod(sandboxOf(n), podUid(n));
  const std::chrono::milliseconds runtimeTimeout(400);
  ASSERT_TRUE(runtime->request(3, kPlugin, "Synchronize", report.SerializeAsString(), runtimeTimeout));
  const ttrpc::Response synchronized = replyTo(*runtime, 3);
  EXPECT_EQ(synchronized.status().code(), 0) << synchronized.status().message();
  const size_t adoptedByTheAnswer = vrid_.podAdmits().size();
  EXPECT_LT(adoptedByTheAnswer, 30u) << "the answer waited for the whole ledger sync";
  EXPECT_THAT(log(), HasSubstr("the ledger sync goes on after Synchronize's answer"));
  ASSERT_TRUE(runtime->respond(registering, api::Empty().SerializeAsString()));

  // The runtime removes the last pod before its turn: it is never adopted.
  api::RemovePodSandboxRequest remove;
  *remove.mutable_pod() = nriPod(sandboxOf(kLast), podUid(kLast));
  ASSERT_TRUE(runtime->request(5, kPlugin, "RemovePodSandbox", remove.SerializeAsString(), runtimeTimeout));
  EXPECT_EQ(replyTo(*runtime, 5).status().code(), 0);

  // A container created in a pod whose adoption waits: the pod is adopted first, with its sandbox.
  const int named = kLast - 1;
  api::CreateContainerRequest create;
  *create.mutable_pod() = nriPod(sandboxOf(named), podUid(named));
  create.mutable_container()->set_id("c1");
  create.mutable_container()->set_pod_sandbox_id(sandboxOf(named));
  create.mutable_container()->set_name("app");
  create.mutable_container()->mutable_linux()->mutable_resources()->mutable_cpu()->mutable_shares()->set_value(256);
  ASSERT_TRUE(runtime->request(7, kPlugin, "CreateContainer", create.SerializeAsString(), runtimeTimeout));
  const ttrpc::Response created = replyTo(*runtime, 7);
  EXPECT_EQ(created.status().code(), 0) << created.status().message();
  EXPECT_GE(admitIndex(vrid_, sandboxOf(named)), 0) << "the container's pod was not adopted before it";
  ASSERT_FALSE(vrid_.containerAdmits().empty());
  EXPECT_EQ(vrid_.containerAdmits().back().container_id(), "c1");

  // The rest, between requests, until the sync is done.
  EXPECT_TRUE(testing::eventually([&] { return log().find("the ledger sync is done") != std::string::npos; },
                                  std::chrono::seconds(10)))
      << log();
  for (int n = kFirst; n < kLast; ++n) EXPECT_TRUE(vrid_.holds(podUid(n))) << "pod " << n << " not adopted";
  EXPECT_FALSE(vrid_.holds(podUid(kLast))) << "a pod the runtime removed was adopted";
  EXPECT_EQ(admitIndex(vrid_, sandboxOf(kLast)), -1);
  EXPECT_EQ(vrid_.podAdmits().size(), static_cast<size_t>(kLast - kFirst));  // each once
}

// The next session's Synchronize judges the ledger afresh: what the last one left is dropped.
TEST_F(NriPluginTest, AReconnectedRuntimeDropsTheLastSessionsDeferredAdoptions) {
  auto runtime = accept();
  ASSERT_TRUE(runtime);
  api::ConfigureResponse configured;
  registration(*runtime, configured);
  vrid_.slowPodAdmits(std::chrono::milliseconds(20));
  api::SynchronizeRequest report;
  for (int n = 10; n < 70; ++n) *report.add_pods() = nriPod(sandboxOf(n), podUid(n));
  ASSERT_TRUE(runtime->request(3, kPlugin, "Synchronize", report.SerializeAsString(), std::chrono::milliseconds(400)));
  EXPECT_EQ(replyTo(*runtime, 3).status().code(), 0);
  runtime.reset();  // the runtime restarts with nothing running

  auto again = accept();
  ASSERT_TRUE(again);
  registerWithNothingRunning(*again);
  const size_t admitted = vrid_.podAdmits().size();
  EXPECT_LT(admitted, 60u);
  // Served: a request after the new registration is answered, and nothing of the old list follows.
  api::RunPodSandboxRequest run;
  *run.mutable_pod() = nriPod("sb-new", podUid(99));
  ASSERT_TRUE(again->request(5, kPlugin, "RunPodSandbox", run.SerializeAsString()));
  EXPECT_EQ(replyTo(*again, 5).status().code(), 0);
  EXPECT_EQ(vrid_.podAdmits().size(), admitted + 1);
  EXPECT_THAT(log(), Not(HasSubstr("the ledger sync is done")));
}

}  // namespace
}  // namespace vri
