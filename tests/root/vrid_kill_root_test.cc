// vrid SIGKILLed 30 times while 16 clients admit, resize and release Burstable containers on the
// real cgroup v1 kernel, as root, in a private subtree. After each kill vrid starts again, and for
// every pod the ledger holds either what was last acknowledged or, for the one call each client had
// in flight when vrid died, that call's whole outcome: never a part of it, never a third value. The
// container's cpu.shares then match the ledger (the start-up reconcile has run).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "cgroup-model/cgroup_values.h"
#include "proto/vri.grpc.pb.h"
#include "tests/root/real_v1_subtree.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {
namespace {

constexpr int kClients = 16;
constexpr int kPodsPerClient = 4;
constexpr int kKills = 30;

// One pod a client owns: what vrid last acknowledged, and the call in flight when vrid died.
struct PodSlot {
  std::string uid;
  int generation = 0;                // its container's id changes with each new admit
  std::optional<int64_t> acked;      // the container's request; none: not held
  bool inFlight = false;             // a call vrid may or may not have decided
  std::optional<int64_t> ifDecided;  // what that call's outcome holds (none: released)
  std::string containerId() const { return "c" + uid.substr(uid.size() - 4) + "g" + std::to_string(generation); }
};

v1::AdmitContainerRequest containerRequest(const PodSlot& slot, int64_t milli) {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(slot.uid);
  r.set_pod_name("kill/" + slot.uid.substr(slot.uid.size() - 4));
  r.set_qos(v1::BURSTABLE);
  r.set_container_name("app");
  r.set_container_id(slot.containerId());
  r.set_cpu_request_milli(milli);
  return r;
}

// Random calls on its own pods until a call fails (vrid killed): that call is left in flight.
// Refusals other than vrid being gone are counted as errors.
void churn(v1::Vri::Stub& vrid, std::vector<PodSlot>& pods, unsigned seed, std::atomic<int>& errors,
           std::string& firstError) {
  std::mt19937 random(seed);
  for (;;) {
    PodSlot& slot = pods[random() % pods.size()];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Status status;
    std::optional<int64_t> outcome;
    const int64_t milli = 1 + static_cast<int64_t>(random() % 40);
    if (!slot.acked) {
      ++slot.generation;
      v1::ContainerAllocation placed;
      outcome = milli;
      status = vrid.AdmitContainer(&context, containerRequest(slot, milli), &placed);
    } else if (random() % 4 == 0) {
      v1::ReleasePodRequest release;
      release.set_pod_uid(slot.uid);
      v1::Released released;
      status = vrid.ReleasePod(&context, release, &released);
    } else {
      v1::ContainerAllocation placed;
      outcome = milli;
      status = vrid.ResizeContainer(&context, containerRequest(slot, milli), &placed);
    }
    if (status.ok()) {
      slot.acked = outcome;
      continue;
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE && status.error_code() != grpc::StatusCode::CANCELLED &&
        errors++ == 0) {
      firstError = std::to_string(status.error_code()) + ": " + status.error_message();
    }
    slot.inFlight = true;
    slot.ifDecided = outcome;
    return;
  }
}

std::string readTrimmed(const std::string& path) {
  std::string text = readFile(path);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

TEST(VridKillRootTest, EveryDecisionInFlightAtAKillIsWhollyThereOrNotAtAll) {
  RealV1Subtree subtree("kill");
  ASSERT_NO_FATAL_FAILURE(subtree.make());
  const std::string& root = subtree.root();
  TempDir tmp;
  VridProcess vrid(tmp, "vrid",
                   {"--topology=live", "--ownership=everything", "--kubelet-cgroup-root=/" + root,
                    "--machine-partition=" + root + "/machine", "--cgroup-v1-controllers=cpuset,cpu,cpuacct,pids",
                    "--system-reserved-cpu=1", "--libvirt-uri=", "--reconcile-interval=0"});
  std::vector<std::vector<PodSlot>> pods(kClients);
  for (int c = 0; c < kClients; ++c) {
    for (int p = 0; p < kPodsPerClient; ++p) {
      char uid[40];
      std::snprintf(uid, sizeof uid, "0f000000-0000-4000-8000-%012d", c * 100 + p);
      PodSlot slot;
      slot.uid = uid;
      pods[c].push_back(slot);
    }
  }
  std::mt19937 random(20261127);  // fixed: the same kill moments each run
  int inFlightChecked = 0, decidedBeforeKill = 0;
  for (int kill = 0; kill < kKills; ++kill) {
    ASSERT_TRUE(vrid.start()) << "start " << kill;
    auto stub = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid.adminSocket(), grpc::InsecureChannelCredentials()));

    // What the ledger holds for each pod after the restart.
    for (auto& client : pods) {
      for (PodSlot& slot : client) {
        grpc::ClientContext context;
        v1::GetTenantRequest request;
        request.set_pod_uid(slot.uid);
        v1::Tenant tenant;
        const grpc::Status status = stub->GetTenant(&context, request, &tenant);
        std::optional<int64_t> held;
        std::string heldId;
        if (status.ok()) {
          ASSERT_EQ(tenant.pod().containers_size(), 1) << slot.uid << ": " << tenant.DebugString();
          held = tenant.pod().containers(0).resources().cpu_request_milli();
          heldId = tenant.pod().containers(0).resources().id();
          // The pod and container as they were admitted, not cgroups adopted as a tenant of their own.
          EXPECT_EQ(tenant.pod().name(), "kill/" + slot.uid.substr(slot.uid.size() - 4)) << "kill " << kill;
          EXPECT_EQ(tenant.pod().containers(0).resources().name(), "app") << "kill " << kill << ", pod " << slot.uid;
        } else {
          ASSERT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
        }
        const bool asAcked = held == slot.acked;
        const bool asDecided = slot.inFlight && held == slot.ifDecided;
        EXPECT_TRUE(asAcked || asDecided)
            << "kill " << kill << ", pod " << slot.uid << ": the ledger holds "
            << (held ? std::to_string(*held) + "m" : "nothing") << "; acknowledged "
            << (slot.acked ? std::to_string(*slot.acked) + "m" : "nothing")
            << (slot.inFlight ? "; in flight " + (slot.ifDecided ? std::to_string(*slot.ifDecided) + "m" : "a release")
                              : "");
        if (slot.inFlight) {
          ++inFlightChecked;
          if (asDecided && !asAcked) ++decidedBeforeKill;
        }
        slot.acked = held;
        slot.inFlight = false;
        if (held) {
          // The container's cgroup as the ledger says, after the start-up reconcile.
          const std::string dir = "/sys/fs/cgroup/cpu/" + root + "/kubepods/burstable/pod" + slot.uid + "/" + heldId;
          EXPECT_EQ(readTrimmed(dir + "/cpu.shares"), std::to_string(milliCpuToShares(*held).value))
              << "kill " << kill << ", pod " << slot.uid;
        }
      }
    }
    if (::testing::Test::HasFailure()) {
      vrid.stop(SIGKILL);
      break;
    }

    std::atomic<int> errors{0};
    std::string firstError;
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back(churn, std::ref(*stub), std::ref(pods[c]), random(), std::ref(errors), std::ref(firstError));
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + random() % 400));
    EXPECT_EQ(vrid.stop(SIGKILL), 128 + SIGKILL);
    for (std::thread& client : clients) client.join();
    EXPECT_EQ(errors.load(), 0) << firstError;
  }
  ASSERT_TRUE(vrid.start());
  EXPECT_EQ(vrid.stop(), 0);
  // Most kills catch calls that were not decided yet; some must have caught one that was, or the
  // test did not look where the question is.
  std::printf("%d calls in flight at a kill: %d decided before it, the rest not\n", inFlightChecked, decidedBeforeKill);
  EXPECT_GT(inFlightChecked, kKills);
}

}  // namespace
}  // namespace vri::testing
