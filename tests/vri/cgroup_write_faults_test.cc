// A whole vrid (real gRPC, a real sqlite ledger, the cgroupfs fixture) whose
// cgroup writes fail at random, as the kernel makes them fail (EBUSY, ENOSPC,
// EACCES), under a seeded churn of exclusive and shared pods. After every call:
// no CPU held by two tenants or by a tenant and the shared pool; a refused admit
// left nothing in the ledger; an acknowledged one is there. With the faults
// gone, one reconcile brings ledger and cgroups into agreement, and a restart
// finds every acknowledged tenant where it was acknowledged.
//
// The seed is printed; VRI_FAULT_SEED=N repeats a run (the test command uses the fixed default).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "tests/support/failing_cgroupfs.h"
#include "tests/vri/daemon_harness.h"
#include "tests/vri/vrid_api_fixture.h"

namespace vri {
namespace {

using testing::container;

constexpr uint64_t kDefaultSeed = 61;

uint64_t seedFromEnvironment() {
  const char* given = std::getenv("VRI_FAULT_SEED");
  return given != nullptr ? std::strtoull(given, nullptr, 10) : kDefaultSeed;
}

// Each pod's container has a runtime id of its own, as the runtime gives it.
std::string containerId(const std::string& uid) { return "c" + uid.substr(uid.size() - 6); }

std::string podUid(int n) {
  char uid[40];
  std::snprintf(uid, sizeof uid, "0f000000-0000-4000-8000-%012d", n);
  return uid;
}

class CgroupWriteFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vrid_.cgroupFs = &faulty_;
    ASSERT_TRUE(vrid_.start());
  }

  // The pod's tenant as the ledger holds it, or nullopt when it holds none.
  std::optional<v1::PodInfo> pod(const std::string& uid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_pod_uid(uid);
    v1::Tenant tenant;
    const grpc::Status status = vrid_.readOnly->GetTenant(&context, request, &tenant);
    if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
    EXPECT_TRUE(status.ok()) << status.error_message();
    return tenant.pod();
  }

  // No CPU twice: the exclusive sets are disjoint, and none is in the shared pool.
  void expectNoCpuTwice(const std::string& when) {
    grpc::ClientContext c1;
    v1::ListTenantsRequest request;
    request.set_kind(v1::ListTenantsRequest::PODS);
    v1::TenantList list;
    ASSERT_TRUE(vrid_.readOnly->ListTenants(&c1, request, &list).ok());
    grpc::ClientContext c2;
    v1::Node node;
    ASSERT_TRUE(vrid_.readOnly->GetNode(&c2, {}, &node).ok());
    CpuSet held = *CpuSet::parse(node.shared_cpus());
    for (const v1::Tenant& tenant : list.tenants()) {
      for (const v1::ContainerInfo& c : tenant.pod().containers()) {
        const CpuSet exclusive = *CpuSet::parse(c.exclusive_cpus());
        ASSERT_FALSE(exclusive.intersects(held))
            << when << ": " << tenant.pod().uid() << " holds " << exclusive.format()
            << ", already held: " << held.format() << " (shared pool " << node.shared_cpus() << ")";
        held |= exclusive;
      }
    }
  }

  std::vector<std::string> drift() {
    grpc::ClientContext context;
    v1::ReconcileRequest dry;
    dry.set_dry_run(true);
    v1::ReconcileReply report;
    const grpc::Status status = vrid_.admin->Reconcile(&context, dry, &report);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {report.drift().begin(), report.drift().end()};
  }

  testing::DaemonHarness vrid_;
  testing::FailingCgroupFs faulty_{vrid_.fs()};
};

TEST_F(CgroupWriteFaultsTest, RandomWriteFailuresNeverPlaceACpuTwiceNorLoseAnAcknowledgedDecision) {
  const uint64_t seed = seedFromEnvironment();
  std::printf("cgroup write faults: seed %llu (VRI_FAULT_SEED=%llu repeats this run)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 churn(seed);
  faulty_.failAtRandom(seed + 1, 0.02, {EBUSY, ENOSPC, EACCES});

  std::map<std::string, std::string> acknowledged;  // pod UID -> its exclusive CPUs ("" when shared)
  int next = 0, admitted = 0, refused = 0, released = 0, releaseRefused = 0;
  for (int step = 0; step < 300; ++step) {
    const int action = std::uniform_int_distribution<int>(0, 9)(churn);
    const std::string when = "step " + std::to_string(step) + " (seed " + std::to_string(seed) + ")";
    if (action < 6 || acknowledged.empty()) {
      const std::string uid = podUid(next++);
      const bool exclusive = action % 2 == 0;
      const int64_t cpus = exclusive ? 1000 * std::uniform_int_distribution<int>(1, 2)(churn) : 250;
      grpc::ClientContext context;
      v1::ContainerAllocation placed;
      const grpc::Status status = vrid_.admin->AdmitContainer(
          &context,
          container(uid, exclusive ? v1::GUARANTEED : v1::BURSTABLE, cpus, exclusive ? cpus : 0, containerId(uid)),
          &placed);
      const auto held = pod(uid);
      if (status.ok()) {
        ++admitted;
        ASSERT_TRUE(held.has_value()) << when << ": an acknowledged admit is not in the ledger";
        acknowledged[uid] = held->containers(0).exclusive_cpus();
        if (placed.exclusive()) {
          EXPECT_EQ(placed.cpuset_cpus(), acknowledged[uid]) << when;
        }
      } else {
        ++refused;
        if (refused == 1) std::printf("first refusal: %s\n", status.error_message().c_str());
        EXPECT_FALSE(held.has_value()) << when << ": a refused admit (" << status.error_message()
                                       << ") is in the ledger";
      }
    } else {
      auto it = acknowledged.begin();
      std::advance(it, std::uniform_int_distribution<size_t>(0, acknowledged.size() - 1)(churn));
      const std::string uid = it->first;
      grpc::ClientContext context;
      v1::ReleasePodRequest request;
      request.set_pod_uid(uid);
      v1::Released done;
      const grpc::Status status = vrid_.admin->ReleasePod(&context, request, &done);
      if (status.ok()) {
        ++released;
        EXPECT_FALSE(pod(uid).has_value()) << when << ": a released pod is still in the ledger";
        acknowledged.erase(it);
      } else {
        ++releaseRefused;  // the pod stays, as it was
        const auto held = pod(uid);
        ASSERT_TRUE(held.has_value()) << when << ": a refused release (" << status.error_message()
                                      << ") removed the pod";
        EXPECT_EQ(held->containers(0).exclusive_cpus(), it->second) << when;
      }
    }
    ASSERT_NO_FATAL_FAILURE(expectNoCpuTwice(when));
  }
  std::printf("cgroup write faults: %d faults injected; %d admits acknowledged, %d refused; %d releases, %d refused\n",
              faulty_.injected(), admitted, refused, released, releaseRefused);
  // The faults really happened and really refused decisions: a run that injects none proves nothing.
  EXPECT_GT(faulty_.injected(), 20);
  EXPECT_GT(refused, 5);
  EXPECT_GT(admitted, 50);

  // The faults end: one reconcile brings the cgroups to the ledger, and nothing differs after it.
  faulty_.random = false;
  {
    grpc::ClientContext context;
    v1::ReconcileRequest repair;
    v1::ReconcileReply report;
    const grpc::Status status = vrid_.admin->Reconcile(&context, repair, &report);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_THAT(drift(), ::testing::IsEmpty()) << vrid_.logText();
  for (const auto& [uid, exclusive] : acknowledged) {
    if (exclusive.empty()) continue;
    const auto cgroup = CgroupDir{"cpuset", *CgroupPath::parse("kubepods/pod" + uid + "/" + containerId(uid))};
    const Result<std::string> written = vrid_.fs().read(cgroup, "cpuset.cpus");
    ASSERT_TRUE(written.ok()) << uid << ": " << written.error().message();
    EXPECT_EQ(*written, exclusive) << uid;
  }

  // Restarted: every acknowledged tenant is where it was acknowledged, and the kernel agrees.
  ASSERT_TRUE(vrid_.restart());
  for (const auto& [uid, exclusive] : acknowledged) {
    const auto held = pod(uid);
    ASSERT_TRUE(held.has_value()) << uid << " was acknowledged and is gone after a restart";
    EXPECT_EQ(held->containers(0).exclusive_cpus(), exclusive) << uid;
  }
  ASSERT_NO_FATAL_FAILURE(expectNoCpuTwice("after the restart"));
  EXPECT_THAT(drift(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace vri
