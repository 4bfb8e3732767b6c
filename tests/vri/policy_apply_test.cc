// NodeManager::applyPolicy: a new placement policy as one transaction, on the fixture behind a
// cgroupfs that fails on demand. What it moves lands in the ledger, the store and the cgroups
// together; a write failing at any point leaves all three as they were; a tenant the new policy
// cannot hold refuses the whole change, named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/vri/decision_pipeline_harness.h"
#include "vri/applied_policy.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

// Every file of the fixture's cgroup tree, by path: what "the cgroups as they were" means.
std::map<std::string, std::string> cgroupFiles(const std::string& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::ostringstream text;
    text << in.rdbuf();
    files[entry.path().string()] = text.str();
  }
  return files;
}

// The files whose contents differ, or that one side lacks: a short message.
std::string differences(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  std::string out;
  for (const auto& [path, text] : a) {
    const auto other = b.find(path);
    if (other == b.end())
      out += path + ": gone\n";
    else if (other->second != text)
      out += path + ": " + text + " -> " + other->second + "\n";
  }
  for (const auto& [path, text] : b)
    if (!a.count(path)) out += path + ": new\n";
  return out;
}

// The store's records and meta, as text, for comparing before and after.
std::string storeImage(const MemoryLedgerStore& store) {
  std::string out;
  for (const auto& [uid, pod] : store.stored().pods) {
    out += "pod " + uid;
    for (const auto& [name, c] : pod.containers)
      out += " " + name + "=" + c.exclusive.format() + "/" + NumaMemory::mems(c.memory).format();
    out += "\n";
  }
  for (const auto& [uuid, vm] : store.stored().vms) out += "vm " + uuid + " " + vm.placement.exclusive.format() + "\n";
  for (const auto& [key, value] : store.stored().meta) out += "meta " + key + "=" + value + "\n";
  return out;
}

class PolicyApplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(p.memory_.setMeta(kAppliedPolicyMeta, "before\n").ok());  // as vrid's first start writes it
    const auto placed = p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 2));
    ASSERT_TRUE(placed.ok()) << placed.error().message();
    held = placed->exclusive;
    ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 500)).ok());
    ASSERT_TRUE(p.node->admitVm(vm(kVm, 1, VmCpuPolicy::kDedicated)).ok());
    p.fakeQemu(kScope, 4242, 1);
    ASSERT_TRUE(p.node->vmStarted(kVm, 4242).ok());
  }

  // The ledger's policy with `reserved` reserved by name.
  PolicyChange reserving(const CpuSet& reserved) const {
    PolicyChange change{*p.ledger->config(), {}, false, "reserved_cpus = " + reserved.format() + "\n", "before\n"};
    change.ledger.pool.reserved.cpus = reserved;
    change.ledger.pool.reserved.count = 0;
    change.allocatable.allocatableCpuMilli = 7000;
    return change;
  }
  CpuSet reservedNow() const {
    const StatePtr now = p.ledger->state();
    return now->reserved();
  }
  std::string containerCpus(const std::string& pod, const std::string& id) {
    auto value = p.fixture().read({"cpuset", *CgroupPath::parse("kubepods/" + pod + "/" + id)}, "cpuset.cpus");
    return value.ok() ? *value : value.error().message();
  }

  static constexpr char kVm[] = "8f0c0001-0000-4000-8000-000000000001";
  static constexpr char kScope[] = "machine/qemu-1-vm1.libvirt-qemu";
  Pipeline p;
  CpuSet held;
};

TEST_F(PolicyApplyTest, AReservationOverAContainersCpusMovesItAndItsCgroupFollows) {
  const CpuSet reserved = reservedNow() | CpuSet{*held.begin()};
  const auto plan = p.node->applyPolicy(reserving(reserved));
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_EQ(plan->changes.size(), 1u);
  const CpuSet after = plan->changes[0].cpusAfter;
  EXPECT_EQ(after.count(), 2);
  EXPECT_FALSE(after.intersects(reserved));

  // The ledger, the store and the cgroup say the same, under the new policy.
  const StatePtr now = p.ledger->state();
  EXPECT_EQ(now->reserved(), reserved);
  EXPECT_EQ(now->pod(uid(1))->containers.at("app").exclusive, after);
  EXPECT_EQ(p.memory_.stored().pods.at(uid(1)).containers.at("app").exclusive, after);
  EXPECT_EQ(p.memory_.stored().meta.at(kAppliedPolicyMeta), "reserved_cpus = " + reserved.format() + "\n");
  EXPECT_EQ(containerCpus("pod" + uid(1), "c1"), after.format());
  EXPECT_EQ(*p.ledger->config()->pool.reserved.cpus, reserved);
  const auto invariants = checkLedgerInvariants(*now, p.ledger->topology(), *p.ledger->config());
  ASSERT_TRUE(invariants.ok()) << invariants.error().message();
  // What runs at run time is kept: the VM's cgroups are still known, and nothing is left to write.
  EXPECT_NE(now->vmScope(kVm), nullptr);
  EXPECT_TRUE(p.pendingOps().empty());
  // A shared container follows the new shared pool, which the moved container left.
  EXPECT_EQ(containerCpus("burstable/pod" + uid(2), "c2"), now->shared().format());
  EXPECT_FALSE(now->shared().intersects(after));
}

TEST_F(PolicyApplyTest, AWriteFailingAtAnyPointLeavesTheLedgerTheStoreAndTheCgroupsAsTheyWere) {
  const CpuSet reserved = reservedNow() | CpuSet{*held.begin()};
  const auto files = cgroupFiles(p.fixtureDir() + "/cgroup");
  const std::string stored = storeImage(p.memory_);
  const StatePtr before = p.ledger->state();
  int failedAt = 0;
  for (;; ++failedAt) {
    ASSERT_LT(failedAt, 200) << "the apply never got through";
    p.fs.failOnceAfter(failedAt);
    const auto plan = p.node->applyPolicy(reserving(reserved));
    if (plan.ok()) break;
    EXPECT_THAT(plan.error().message(), HasSubstr("the policy was not changed")) << "write " << failedAt;
    EXPECT_EQ(p.ledger->state(), before) << "write " << failedAt;
    EXPECT_EQ(p.ledger->config()->pool.reserved.cpus, std::nullopt) << "write " << failedAt;
    EXPECT_EQ(storeImage(p.memory_), stored) << "write " << failedAt;
    EXPECT_EQ(differences(files, cgroupFiles(p.fixtureDir() + "/cgroup")), "") << "write " << failedAt;
    EXPECT_FALSE(p.node->writesPending()) << "write " << failedAt;
  }
  // The apply writes more than once, so that some failures above fell half way through it.
  EXPECT_GT(failedAt, 2);
  EXPECT_EQ(reservedNow(), reserved);
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST_F(PolicyApplyTest, APolicyThatCannotHoldATenantIsRefusedNamingItAndChangesNothing) {
  // Six CPUs reserved: the two-CPU container, the dedicated VM and the shared pool cannot all fit.
  const auto files = cgroupFiles(p.fixtureDir() + "/cgroup");
  const std::string stored = storeImage(p.memory_);
  const StatePtr before = p.ledger->state();
  const auto plan = p.node->applyPolicy(reserving(*CpuSet::parse("0-5")));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(plan.error().message(), HasSubstr("cannot hold every tenant, nothing was changed"));
  // The container is placed first and fits; the VM then does not.
  EXPECT_THAT(plan.error().message(), HasSubstr("VM vm-8f0c (vm/" + std::string(kVm) + "): "));
  EXPECT_EQ(p.ledger->state(), before);
  EXPECT_EQ(storeImage(p.memory_), stored);
  EXPECT_EQ(differences(files, cgroupFiles(p.fixtureDir() + "/cgroup")), "");
}

TEST_F(PolicyApplyTest, APolicyThatWouldMoveBoundMemoryIsRefusedNamingTheTenant) {
  // Memory pinning turned on by an apply (nothing moves: no container had its memory bound).
  PolicyChange pinning = reserving(reservedNow());
  pinning.ledger.pinGuaranteedMemory = true;
  const auto pinned = p.node->applyPolicy(pinning);
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  EXPECT_TRUE(pinned->changes.empty());
  const auto placed = p.node->admitContainer(pod(uid(3), QosClass::kGuaranteed), exclusive("c3", 1));
  ASSERT_TRUE(placed.ok()) << placed.error().message();
  ASSERT_FALSE(placed->mems.empty());
  // Room on the other node (the container and the VM of SetUp gone), and its own node reserved: it
  // would move there, its memory too.
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  ASSERT_TRUE(p.node->releaseVm(kVm).ok());
  const StatePtr now = p.ledger->state();
  CpuSet nodeCpus;
  for (const NumaNode& node : p.ledger->topology().numaNodes())
    if (placed->mems.contains(node.id)) nodeCpus = node.cpus;
  PolicyChange change = reserving(reservedNow() | nodeCpus);
  change.ledger.pinGuaranteedMemory = true;
  const std::string stored = storeImage(p.memory_);
  const auto refused = p.node->applyPolicy(change);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              HasSubstr("pod/" + uid(3) + "/app): its memory is bound to NUMA nodes " + placed->mems.format()));
  EXPECT_EQ(p.ledger->state(), now);
  EXPECT_EQ(storeImage(p.memory_), stored);
}

TEST_F(PolicyApplyTest, TheStoreAfterAnApplyLoadsUnderTheNewPolicyWithEveryTenant) {
  const CpuSet reserved = reservedNow() | CpuSet{*held.begin()};
  const PolicyChange change = reserving(reserved);
  ASSERT_TRUE(p.node->applyPolicy(change).ok());
  auto copy = std::make_unique<MemoryLedgerStore>();
  LedgerChange all;
  for (const auto& [uid, pod] : p.memory_.stored().pods) all.putPods.push_back(pod);
  for (const auto& [uuid, vm] : p.memory_.stored().vms) all.putVms.push_back(vm);
  all.meta = p.memory_.stored().meta;
  ASSERT_TRUE(copy->apply(all).ok());
  auto reopened = Ledger::open(p.ledger->sharedTopology(), change.ledger, std::move(copy));
  ASSERT_TRUE(reopened.ok()) << reopened.error().message();
  EXPECT_TRUE((*reopened)->loadProblems().empty()) << (*reopened)->loadProblems().front();
  const StatePtr loaded = (*reopened)->state(), now = p.ledger->state();
  EXPECT_EQ(loaded->pod(uid(1))->containers.at("app").exclusive, now->pod(uid(1))->containers.at("app").exclusive);
  EXPECT_EQ(loaded->shared(), now->shared());
}

}  // namespace
}  // namespace vri::testing
