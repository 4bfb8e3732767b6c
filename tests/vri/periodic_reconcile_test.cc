// vrid's periodic reconcile on a clock the test moves: it runs once per
// interval, releases a VM whose QEMU has been gone for the grace period (and
// not a day earlier than that, nor a VM that is only reserved), and a reload
// starts the new interval at once.
#include <gmock/gmock.h>

#include "tests/support/eventually.h"
#include "tests/support/manual_clock.h"
#include "tests/vri/daemon_harness.h"

namespace vri {
namespace {

constexpr char kRunning[] = "7d7e0a2e-0000-4000-8000-000000000011";
constexpr char kReserved[] = "7d7e0a2e-0000-4000-8000-000000000012";
constexpr char kScope[] = "machine/qemu-1-web.libvirt-qemu";
constexpr std::chrono::seconds kInterval{10};

v1::AdmitVmRequest vm(const std::string& uuid, const std::string& name) {
  v1::AdmitVmRequest r;
  r.set_uuid(uuid);
  r.set_name(name);
  r.set_vcpus(1);
  r.set_cpu_policy(v1::DEDICATED);
  r.set_memory_bytes(256ULL << 20);
  return r;
}

class PeriodicReconcileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vrid_.clock = &clock_;
    vrid_.config.reconcileIntervalSeconds = kInterval.count();
    vrid_.config.releaseGraceSeconds = 30;
    ASSERT_TRUE(vrid_.start());
  }

  // True once the reconcile loop waits for `period` from now.
  bool loopWaits(std::chrono::seconds period) {
    return testing::eventually([&] { return clock_.nextDeadline() == clock_.now() + period; });
  }
  // Moves the clock one interval once the loop waits for it, and waits for the reconcile it is due.
  ::testing::AssertionResult tick() {
    if (!loopWaits(kInterval)) return ::testing::AssertionFailure() << "the reconcile loop is not waiting";
    const uint64_t before = vrid_.daemon().node().reconciles();
    clock_.advance(kInterval);
    if (!testing::eventually([&] { return vrid_.daemon().node().reconciles() > before; }))
      return ::testing::AssertionFailure() << "no reconcile after the interval";
    return ::testing::AssertionSuccess();
  }
  bool known(const std::string& uuid) {
    const StatePtr now = vrid_.daemon().node().state();
    return now->vms.count(uuid) > 0;
  }

  testing::ManualClock clock_;  // outlives the daemon
  testing::DaemonHarness vrid_;
};

TEST_F(PeriodicReconcileTest, ReleasesAVmGoneForTheGracePeriodAndKeepsAReservedOne) {
  grpc::ClientContext c1, c2, c3;
  v1::VmAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c1, vm(kRunning, "web"), &placed).ok());
  vrid_.fakeQemu(kScope, 4242, kRunning, 1);
  v1::VmStartedRequest started;
  started.set_uuid(kRunning);
  started.set_qemu_pid(4242);
  v1::VmStartedReply where;
  ASSERT_TRUE(vrid_.admin->VmStarted(&c2, started, &where).ok());
  ASSERT_TRUE(vrid_.admin->ReserveVm(&c3, vm(kReserved, "db"), &placed).ok());

  ASSERT_TRUE(tick());  // seen running
  EXPECT_TRUE(known(kRunning));
  vrid_.exitQemu(kScope, 4242);
  // Missing from the next reconcile on; released at the first one 30 s after that.
  for (int seen_missing = 0; seen_missing <= 20; seen_missing += 10) {
    ASSERT_TRUE(tick());
    EXPECT_TRUE(known(kRunning)) << "released after " << seen_missing << " s";
  }
  ASSERT_TRUE(tick());
  EXPECT_FALSE(known(kRunning));
  const StatePtr now = vrid_.daemon().node().state();
  EXPECT_TRUE(now->vms.find(kReserved)->defined);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(tick());
  EXPECT_TRUE(known(kReserved));  // only reserved: never released by reconcile
}

TEST_F(PeriodicReconcileTest, AReloadStartsTheNewIntervalAtOnce) {
  ASSERT_TRUE(loopWaits(kInterval));
  DaemonConfig changed = vrid_.config;
  changed.reconcileIntervalSeconds = 60;
  vrid_.daemon().reload(changed);
  EXPECT_TRUE(loopWaits(std::chrono::seconds(60)));
  const uint64_t before = vrid_.daemon().node().reconciles();
  clock_.advance(std::chrono::seconds(60));
  EXPECT_TRUE(testing::eventually([&] { return vrid_.daemon().node().reconciles() > before; }));
  EXPECT_TRUE(loopWaits(std::chrono::seconds(60)));
  // GetNode shows the options in effect: the new interval, the placement policy a reload applies,
  // and not an option that waits for a restart.
  changed.reservedCpus.count = 3;
  changed.usageHistory = 30;
  vrid_.daemon().reload(changed);
  grpc::ClientContext context;
  v1::Node node;
  ASSERT_TRUE(vrid_.readOnly->GetNode(&context, {}, &node).ok());
  EXPECT_EQ(node.options().at("reconcile_interval"), "60");
  EXPECT_EQ(node.options().at("reserved_cpu_count"), "3");
  EXPECT_EQ(node.reserved_cpus(), "0-2");
  EXPECT_EQ(node.options().at("usage_history"), "60");
}

}  // namespace
}  // namespace vri
