// The decision pipeline (decide, commit, write, publish) with a real ledger,
// the cgroupfs fixture (v1) and stores and cgroupfs that fail on demand: every
// path that undoes or holds back a decision, and the delta writes checked
// against a full read-and-diff after every step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <random>
#include <thread>

#include "tests/support/directory_snapshot.h"
#include "tests/vri/decision_pipeline_harness.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

using testing::exclusive;
using testing::Pipeline;
using testing::pod;
using testing::shared;
using testing::uid;
using testing::vm;

TEST(DecisionPipelineTest, DeltaWritesLeaveNothingForAFullReconcile) {
  Pipeline p;
  std::mt19937 random(7);
  std::vector<std::string> pods, vms;
  int pid = 5000;
  for (int step = 0; step < 150; ++step) {
    const int choice = static_cast<int>(random() % 6);
    if (choice == 0) {
      const std::string id = uid(step);
      if (p.node->admitContainer(pod(id, QosClass::kGuaranteed), exclusive("c" + std::to_string(step), 1)).ok())
        pods.push_back(id);
    } else if (choice == 1) {
      const std::string id = uid(step);
      if (p.node->admitContainer(pod(id, QosClass::kBurstable), shared("c" + std::to_string(step), 100)).ok())
        pods.push_back(id);
    } else if (choice == 2 && !pods.empty()) {
      const size_t victim = random() % pods.size();
      EXPECT_TRUE(p.node->releasePod(pods[victim]).ok());
      pods.erase(pods.begin() + static_cast<long>(victim));
    } else if (choice == 3) {
      char uuid[40];
      std::snprintf(uuid, sizeof uuid, "8f0c%04d-0000-4000-8000-000000000001", step);
      const bool dedicated = random() % 2 == 0;
      if (!p.node->admitVm(vm(uuid, 1, dedicated ? VmCpuPolicy::kDedicated : VmCpuPolicy::kShared)).ok()) continue;
      const std::string scope = "machine/qemu-" + std::to_string(step) + "-vm" + std::to_string(step) + ".libvirt-qemu";
      p.fakeQemu(scope, ++pid, 1);
      auto started = p.node->vmStarted(uuid, pid);
      ASSERT_TRUE(started.ok()) << started.error().message();
      vms.push_back(uuid);
    } else if (choice == 4 && !vms.empty()) {
      const size_t victim = random() % vms.size();
      EXPECT_TRUE(p.node->releaseVm(vms[victim]).ok());
      vms.erase(vms.begin() + static_cast<long>(victim));
    } else if (choice == 5 && !pods.empty()) {
      const std::string& id = pods[random() % pods.size()];
      const PodRecord record = *p.ledger->findPod(id);
      if (record.spec.qos == QosClass::kBurstable) {
        (void)p.node->resizeContainer(id, shared(record.containers.at("app").spec.id, 100 + step));
      }
    }
    const auto left = p.pendingOps();
    ASSERT_TRUE(left.empty()) << "step " << step << ": the delta left " << left.size() << " operations, first "
                              << left.front().describe();
    const StatePtr now = p.ledger->state();
    ASSERT_TRUE(checkLedgerInvariants(*now, p.ledger->topology(), *p.ledger->config()).ok());
  }
}

TEST(DecisionPipelineTest, DeltaWritesOnCgroupV2LeaveNothingForAFullReconcile) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2);
  std::mt19937 random(11);
  std::vector<std::string> pods;
  for (int step = 0; step < 80; ++step) {
    const int choice = static_cast<int>(random() % 4);
    const std::string id = uid(step);
    if (choice == 0) {
      if (p.node->admitContainer(pod(id, QosClass::kGuaranteed), exclusive("c" + std::to_string(step), 1)).ok())
        pods.push_back(id);
    } else if (choice == 1) {
      if (p.node->admitContainer(pod(id, QosClass::kBestEffort), shared("c" + std::to_string(step), 0)).ok())
        pods.push_back(id);
    } else if (choice == 2 && !pods.empty()) {
      const size_t victim = random() % pods.size();
      ASSERT_TRUE(p.node->releasePod(pods[victim]).ok());
      pods.erase(pods.begin() + static_cast<long>(victim));
    } else {
      if (p.node->admitContainer(pod(id, QosClass::kBurstable), shared("c" + std::to_string(step), 200)).ok())
        pods.push_back(id);
    }
    const auto left = p.pendingOps();
    ASSERT_TRUE(left.empty()) << "step " << step << ": the delta left " << left.size() << " operations, first "
                              << left.front().describe();
  }
}

TEST(DecisionPipelineTest, OnCgroupV2AFirstPodWithAMemoryLimitMakesItsParentsDelegateMemory) {
  // Found on a real v2 kernel: nothing delegated memory below kubepods yet, so the pod's own
  // subtree could not enable it (ENOENT) until its parents did.
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2);
  ContainerSpec web = shared("c1", 250);
  web.memoryLimitBytes = 64ULL << 20;
  auto placed = p.node->admitContainer(pod(uid(1), QosClass::kBurstable), web);
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const auto v2 = [&](const std::string& path, const char* file) {
    auto text = p.fixture().read({"", *CgroupPath::parse(path)}, file);
    return text.ok() ? *text : "<" + text.error().message() + ">";
  };
  EXPECT_THAT(v2("kubepods/burstable", "cgroup.subtree_control"), HasSubstr("memory"));
  EXPECT_EQ(v2("kubepods/burstable/pod" + uid(1) + "/c1", "memory.max"), std::to_string(64ULL << 20));
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST(DecisionPipelineTest, ASharedAdmitMovesThePodVmBalanceAtOnce) {
  Pipeline p(Ownership::kCpusetsAndMachine);
  const std::string uuid = "8f0c0001-0000-4000-8000-000000000001";
  ASSERT_TRUE(p.node->admitVm(vm(uuid, 2, VmCpuPolicy::kShared)).ok());
  p.fakeQemu("machine/qemu-1-web.libvirt-qemu", 4242, 2);
  ASSERT_TRUE(p.node->vmStarted(uuid, 4242).ok());
  const std::string alone = p.read("machine", "cpu.shares");
  // A Burstable pod's request moves the balance between kubepods and the machine partition.
  for (const char* path : {"kubepods/burstable/pod"
                           "1a000001-0000-4000-8000-000000000000"}) {
    for (const char* h : {"cpuset", "cpu,cpuacct"}) ASSERT_TRUE(p.fixture().mkdir({h, *CgroupPath::parse(path)}).ok());
  }
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kBurstable), shared("c1", 2000)).ok());
  EXPECT_NE(p.read("machine", "cpu.shares"), alone);
  EXPECT_TRUE(p.pendingOps().empty()) << p.pendingOps().front().describe();
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  EXPECT_EQ(p.read("machine", "cpu.shares"), alone);
  EXPECT_TRUE(p.pendingOps().empty()) << p.pendingOps().front().describe();
}

TEST(DecisionPipelineTest, NarrowingAnAdoptedPodNarrowsTheChildrenVriDoesNotKnow) {
  Pipeline p(Ownership::kCpusetsAndMachine);
  // kubelet made the pod, containerd its sandbox and the container; VRI knows the container only.
  const std::string pod_path = "kubepods/burstable/pod" + uid(1);
  for (const std::string& path : {pod_path, pod_path + "/sandbox0001", pod_path + "/c1"}) {
    for (const char* h : {"cpuset", "cpu,cpuacct"}) ASSERT_TRUE(p.fixture().mkdir({h, *CgroupPath::parse(path)}).ok());
    ASSERT_TRUE(p.fixture().write({"cpuset", *CgroupPath::parse(path)}, "cpuset.mems", "0-1").ok());
    ASSERT_TRUE(p.fixture().write({"cpuset", *CgroupPath::parse(path)}, "cpuset.cpus", "0-7").ok());
  }
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kBurstable), shared("c1", 100)).ok());
  // An exclusive tenant takes CPUs: the sandbox must leave them too, or v1 refuses to narrow the pod.
  auto placed = p.node->admitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 2));
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  const StatePtr now = p.ledger->state();
  const CpuSet shared_cpus = now->shared();
  EXPECT_EQ(p.read(pod_path), shared_cpus.format());
  EXPECT_EQ(p.read(pod_path + "/c1"), shared_cpus.format());
  EXPECT_FALSE(CpuSet::parse(p.read(pod_path + "/sandbox0001"))->intersects(placed->exclusive));
}

TEST(DecisionPipelineTest, AResizeWhoseWriteFailsHoldsTheCpusItGaveUp) {
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 3)).ok());
  p.fs.failing = true;
  auto resized = p.node->resizeContainer(uid(1), exclusive("c1", 1));
  ASSERT_TRUE(resized.ok()) << resized.error().message();
  EXPECT_TRUE(p.sawEvent(EventKind::kWritePending));
  StatePtr now = p.ledger->state();
  EXPECT_EQ(now->draining().count(), 2);
  now = p.ledger->state();
  EXPECT_FALSE(now->shared().intersects(now->draining()));
  p.fs.failing = false;
  EXPECT_TRUE(p.node->writesPending());  // until the clock moves
  ASSERT_TRUE(p.retriedUntil([&] { return !p.node->writesPending(); }));
  now = p.ledger->state();
  EXPECT_TRUE(now->draining().empty());
  EXPECT_EQ(p.read("kubepods/pod" + uid(1) + "/c1"), resized->exclusive.format());
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST(DecisionPipelineTest, ReconcileReleasesTenantsGoneLongerThanTheGrace) {
  Pipeline p(Ownership::kCpusetsAndMachine);  // grace 60 s on the test's own clock
  const auto make = [&](const std::string& path) {
    for (const char* h : {"cpuset", "cpu,cpuacct"}) ASSERT_TRUE(p.fixture().mkdir({h, *CgroupPath::parse(path)}).ok());
    ASSERT_TRUE(p.fixture().write({"cpuset", *CgroupPath::parse(path)}, "cpuset.mems", "0-1").ok());
    ASSERT_TRUE(p.fixture().write({"cpuset", *CgroupPath::parse(path)}, "cpuset.cpus", "0-7").ok());
  };
  // Pod 1 runs a container; pod 2's container has no runtime id yet, its pod cgroup exists; pod 3 has no cgroup.
  make("kubepods/burstable/pod" + uid(1));
  make("kubepods/burstable/pod" + uid(1) + "/c1");
  make("kubepods/burstable/pod" + uid(2));
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kBurstable), shared("c1", 100)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("", 100)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(3), QosClass::kBurstable), shared("", 100)).ok());
  // A running VM and one that is only reserved (defined, not running).
  const std::string running = "8f0c0001-0000-4000-8000-000000000001", reserved = "8f0c0002-0000-4000-8000-000000000001";
  const std::string scope = "machine/qemu-1-web.libvirt-qemu";
  ASSERT_TRUE(p.node->admitVm(vm(running, 1, VmCpuPolicy::kShared)).ok());
  p.runQemu(scope, 4242, running);
  ASSERT_TRUE(p.node->vmStarted(running, 4242).ok());
  ASSERT_TRUE(p.node->reserveVm(vm(reserved, 1, VmCpuPolicy::kDedicated)).ok());

  const auto t0 = p.clock.now();
  ASSERT_TRUE(p.node->reconcile(false).ok());  // pod 3 is missing from now on
  // Pod 1's container and the VM's QEMU go away.
  ASSERT_TRUE(p.fixture().rmdir({"cpuset", *CgroupPath::parse("kubepods/burstable/pod" + uid(1) + "/c1")}).ok());
  ASSERT_TRUE(p.fixture().rmdir({"cpu,cpuacct", *CgroupPath::parse("kubepods/burstable/pod" + uid(1) + "/c1")}).ok());
  p.exitQemu(scope, 4242);
  // Reconciles more often than the grace: nothing goes before its time.
  for (int seconds : {20, 40, 59}) {
    p.clock.advanceTo(t0 + std::chrono::seconds(seconds));
    ASSERT_TRUE(p.node->reconcile(false).ok());
  }
  EXPECT_TRUE(p.ledger->findPod(uid(3)).has_value());
  EXPECT_TRUE(p.ledger->findPod(uid(1))->containers.count("app"));
  EXPECT_TRUE(p.ledger->findVm(running).has_value());
  p.clock.advanceTo(t0 + std::chrono::seconds(61));
  ASSERT_TRUE(p.node->reconcile(false).ok());
  EXPECT_FALSE(p.ledger->findPod(uid(3)).has_value());              // gone since t0
  EXPECT_TRUE(p.ledger->findPod(uid(1))->containers.count("app"));  // gone since t0 + 20 s
  p.clock.advanceTo(t0 + std::chrono::seconds(81));
  ASSERT_TRUE(p.node->reconcile(false).ok());
  EXPECT_FALSE(p.ledger->findPod(uid(1))->containers.count("app"));
  EXPECT_FALSE(p.ledger->findVm(running).has_value());
  // Never released by reconcile: a reserved VM, and a container without a runtime id whose pod cgroup exists.
  p.clock.advanceTo(t0 + std::chrono::hours(24));
  ASSERT_TRUE(p.node->reconcile(false).ok());
  EXPECT_TRUE(p.ledger->findVm(reserved).has_value());
  EXPECT_TRUE(p.ledger->findPod(uid(2))->containers.count("app"));
  EXPECT_TRUE(p.sawEvent(EventKind::kReleased));
}

// An admit or resize is committed before its writes, so a failed commit writes nothing; a release
// is committed after them (node_manager.h: CommitPoint), so a failed commit puts back what it wrote.
// Either way the ledger, the store and every cgroup file are as they were.
TEST(DecisionPipelineTest, AFailedCommitChangesNothing) {
  Pipeline p;
  const auto outcomeOf = [](const Result<bool>& released) -> Result<void> {
    if (!released.ok()) return released.error();
    return {};
  };
  const std::string uuid = "8f0c0001-0000-4000-8000-000000000001";
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 100)).ok());
  ASSERT_TRUE(p.node->admitVm(vm(uuid, 1, VmCpuPolicy::kDedicated)).ok());
  const StatePtr before = p.ledger->state();
  const StoredLedger stored = p.memory_.stored();
  const auto files = testing::snapshotFiles(p.fixtureDir());
  const std::vector<std::pair<std::string, std::function<Result<void>()>>> decisions = {
      {"admit", [&] { return p.node->admitContainer(pod(uid(3), QosClass::kGuaranteed), exclusive("c3", 1)).error(); }},
      {"admit pod", [&] { return p.node->admitPod(pod(uid(4), QosClass::kBurstable), {shared("c4", 100)}).error(); }},
      {"resize", [&] { return p.node->resizeContainer(uid(2), shared("c2", 300)).error(); }},
      {"release container", [&] { return outcomeOf(p.node->releaseContainer(uid(2), "app")); }},
      {"release pod", [&] { return outcomeOf(p.node->releasePod(uid(1))); }},
      {"admit VM",
       [&] { return p.node->admitVm(vm("8f0c0002-0000-4000-8000-000000000001", 1, VmCpuPolicy::kShared)).error(); }},
      {"reserve VM",
       [&] {
         return p.node->reserveVm(vm("8f0c0003-0000-4000-8000-000000000001", 1, VmCpuPolicy::kDedicated)).error();
       }},
      {"resize VM", [&] { return p.node->resizeVm(vm(uuid, 2, VmCpuPolicy::kDedicated)).error(); }},
      {"release VM", [&] { return p.node->releaseVm(uuid); }},
  };
  for (const auto& [what, decide] : decisions) {
    const int writes = p.fixture().writes(), mkdirs = p.fixture().mkdirs(), rmdirs = p.fixture().rmdirs();
    p.store.failApplies = 1;
    const Result<void> outcome = decide();
    ASSERT_FALSE(outcome.ok()) << what;
    EXPECT_THAT(outcome.error().message(), HasSubstr("disk I/O error (injected)")) << what;
    EXPECT_EQ(p.ledger->state(), before) << what;
    EXPECT_EQ(p.memory_.stored().pods.size(), stored.pods.size()) << what;
    EXPECT_EQ(p.memory_.stored().vms.size(), stored.vms.size()) << what;
    EXPECT_EQ(encodePod(p.memory_.stored().pods.at(uid(2))), encodePod(stored.pods.at(uid(2)))) << what;
    EXPECT_EQ(testing::snapshotFiles(p.fixtureDir()), files) << what;
    if (what.starts_with("release")) continue;
    EXPECT_EQ(p.fixture().writes(), writes) << what;
    EXPECT_EQ(p.fixture().mkdirs(), mkdirs) << what;
    EXPECT_EQ(p.fixture().rmdirs(), rmdirs) << what;
  }
  // The ledger on its own (no cgroups) refuses the same way.
  p.store.failApplies = 1;
  EXPECT_FALSE(
      p.ledger
          ->apply(&Ledger::decideAdmitContainer, pod(uid(5), QosClass::kBurstable), shared("c5", 100), kNoneFinished)
          .ok());
  EXPECT_EQ(p.ledger->state(), before);
}

TEST(DecisionPipelineTest, AFailedWriteUndoesTheAdmitInLedgerStoreAndCgroups) {
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kBurstable), shared("c1", 100)).ok());
  const StatePtr before = p.ledger->state();
  const std::string shared_cpus = p.read("kubepods/burstable/pod" + uid(1) + "/c1");
  p.fs.failOnceAfter(3);  // part way through: some cgroups written, then a failure
  auto refused = p.node->admitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 2));
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("nothing was changed"));
  EXPECT_EQ(p.ledger->state(), before);
  EXPECT_FALSE(p.memory_.stored().pods.count(uid(2)));
  EXPECT_EQ(p.read("kubepods/burstable/pod" + uid(1) + "/c1"), shared_cpus);
  EXPECT_TRUE(p.pendingOps().empty()) << p.pendingOps().front().describe();
}

TEST(DecisionPipelineTest, AnUndoThatCannotBeCommittedStopsDecisionsUntilTheLedgerIsReloaded) {
  Pipeline p;
  p.fs.failing = true;
  p.store.skipBeforeFailing = 1;  // the decision commits; its undo does not
  p.store.failApplies = 1;
  auto admitted = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2));
  ASSERT_FALSE(admitted.ok());
  EXPECT_EQ(admitted.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(p.sawEvent(EventKind::kHalted));
  // The reload worked but the cgroups still fail: no decisions until they can be written out.
  ASSERT_TRUE(p.node->halted());
  EXPECT_THAT(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 100)).error().message(),
              HasSubstr("takes no decisions"));
  p.fs.failing = false;
  EXPECT_TRUE(p.node->halted());  // until the clock moves
  ASSERT_TRUE(p.retriedUntil([&] { return !p.node->halted(); }));
  // The store's word wins: the admitted container is in the ledger and on the cgroupfs.
  EXPECT_TRUE(p.ledger->findPod(uid(1)).has_value());
  EXPECT_TRUE(p.pendingOps().empty());
  EXPECT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 100)).ok());
}

TEST(DecisionPipelineTest, AHaltDecidedBetweenTheRetryThreadsCheckAndItsWaitIsNotLost) {
  // The retry thread checks for a halt, then waits. A halt whose notify falls between the two
  // must still wake it, or vrid refuses every decision until it is restarted.
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 1)).ok());
  std::atomic<bool> armed{false}, decided{false};
  std::promise<void> hooked;
  std::thread halting;
  p.clock.setBeforeIdleWait([&] {
    if (!armed.exchange(false)) return;
    // The next decision commits, its undo does not, and the ledger cannot be reloaded: vrid halts.
    p.fs.failing = true;
    p.store.skipBeforeFailing = 1;
    p.store.failApplies = 1;
    p.store.failLoads = true;
    halting = std::thread([&] {
      (void)p.node->admitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 1));
      decided = true;
    });
    // The halt may land here, while this thread holds its mutex between check and wait, only
    // if it does not need that mutex; then its notify finds nobody waiting.
    for (int i = 0; i < 200 && !decided; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    hooked.set_value();
  });
  // A release whose write fails makes the retry thread run once and come back to its idle wait.
  p.fs.failOnceAfter(0);
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  armed = true;
  ASSERT_TRUE(p.retriedUntil([&] { return !p.node->writesPending(); }));
  hooked.get_future().wait();
  halting.join();
  ASSERT_TRUE(p.node->halted());
  p.fs.failing = false;
  p.store.failLoads = false;
  EXPECT_TRUE(p.retriedUntil([&] { return !p.node->halted(); })) << "the halt was never seen by the retry thread";
  EXPECT_TRUE(p.node->admitContainer(pod(uid(3), QosClass::kBurstable), shared("c3", 100)).ok());
}

TEST(DecisionPipelineTest, AdoptingARunningContainerIsOneDecisionWhateverTheLedgerKnowsOfIt) {
  // Unknown: taken over on the CPUs it holds (narrower than the shared pool: exclusive).
  Pipeline p;
  auto adopted =
      p.node->adoptOrAdmitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 1), *CpuSet::parse("3"));
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  EXPECT_EQ(adopted->exclusive, *CpuSet::parse("3"));
  EXPECT_TRUE(p.sawEvent(EventKind::kAdopted));
  // Known (admitted meanwhile, by another call): admitted as it is, not refused as a second adoption.
  auto admitted = p.node->admitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 1));
  ASSERT_TRUE(admitted.ok());
  auto again =
      p.node->adoptOrAdmitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 1), *CpuSet::parse("5"));
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->exclusive, admitted->exclusive);
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST(DecisionPipelineTest, AReleaseWhoseWriteFailsHoldsItsCpusUntilTheRetryLands) {
  Pipeline p;
  auto placed = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 3));
  ASSERT_TRUE(placed.ok());
  const CpuSet freed = placed->exclusive;
  p.fs.failing = true;
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());  // the release stands
  EXPECT_TRUE(p.sawEvent(EventKind::kWritePending));
  const StatePtr held = p.ledger->state();
  EXPECT_EQ(held->draining(), freed);
  EXPECT_FALSE(held->shared().intersects(freed));
  EXPECT_FALSE(p.memory_.stored().pods.count(uid(1)));
  ASSERT_TRUE(checkLedgerInvariants(*held, p.ledger->topology(), *p.ledger->config()).ok());
  // Nobody gets the freed CPUs while the write is pending.
  auto other = p.ledger->apply(&Ledger::decideAdmitContainer, pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 3),
                               kNoneFinished);
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_FALSE(other->exclusive.intersects(freed));
  p.fs.failing = false;
  EXPECT_TRUE(p.node->writesPending());  // until the clock moves
  ASSERT_TRUE(p.retriedUntil([&] { return !p.node->writesPending(); }));
  const StatePtr now = p.ledger->state();
  EXPECT_TRUE(now->draining().empty());
  EXPECT_TRUE(p.sawEvent(EventKind::kWriteLanded));
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST(DecisionPipelineTest, TwoIdenticalAdmitsRacingWithAFailedWriteAgreeWithTheLedger) {
  for (int round = 0; round < 10; ++round) {
    Pipeline p;
    p.fs.failOnceAfter(0);  // the first decision's first write fails
    Result<ContainerPlacement> results[2] = {Error::internal("not run"), Error::internal("not run")};
    std::thread a([&] { results[0] = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2)); });
    std::thread b([&] { results[1] = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2)); });
    a.join();
    b.join();
    ASSERT_NE(results[0].ok(), results[1].ok()) << "round " << round;
    const ContainerPlacement& told = results[0].ok() ? *results[0] : *results[1];
    const auto record = p.ledger->findPod(uid(1));
    ASSERT_TRUE(record.has_value());
    EXPECT_EQ(record->containers.at("app").exclusive, told.exclusive);
    EXPECT_EQ(p.read("kubepods/pod" + uid(1) + "/c1"), told.exclusive.format());
    const StatePtr now = p.ledger->state();
    ASSERT_TRUE(checkLedgerInvariants(*now, p.ledger->topology(), *p.ledger->config()).ok());
  }
}

}  // namespace
}  // namespace vri
