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
    PolicyChange change{*p.ledger->config(),
                        {},
                        false,
                        "reserved_cpus = " + reserved.format() + "\n",
                        p.memory_.stored().meta.at(kAppliedPolicyMeta)};
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

// Memory pinning turned on by an apply (nothing moves: no container had its memory bound), then a
// Guaranteed container admitted under it: its memory bound to the node of its CPU.
ContainerPlacement pinnedContainer(Pipeline& p, PolicyChange pinning, ContainerSpec spec) {
  pinning.ledger.pinGuaranteedMemory = true;
  const auto pinned = p.node->applyPolicy(pinning);
  EXPECT_TRUE(pinned.ok()) << pinned.error().message();
  const auto placed = p.node->admitContainer(pod(uid(3), QosClass::kGuaranteed), spec);
  EXPECT_TRUE(placed.ok()) << placed.error().message();
  EXPECT_EQ(placed->mems.count(), 1);
  return placed.ok() ? *placed : ContainerPlacement{};
}

// The CPUs of the NUMA nodes in `mems`.
CpuSet cpusOf(const Topology& topology, const CpuSet& mems) {
  CpuSet cpus;
  for (const NumaNode& node : topology.numaNodes())
    if (mems.contains(node.id)) cpus |= node.cpus;
  return cpus;
}

TEST_F(PolicyApplyTest, ABoundContainersMemoryMovesAtTheRateBeforeItsCgroupIsNarrowed) {
  const ContainerPlacement placed = pinnedContainer(p, reserving(reservedNow()), exclusive("c3", 1));
  // Its process: 16 MiB of pages on its node.
  const CgroupDir cgroup{"cpuset", *CgroupPath::parse("kubepods/pod" + uid(3) + "/c3")};
  ASSERT_TRUE(p.fixture().write(cgroup, "cgroup.procs", "4343").ok());
  const int from = *placed.mems.begin(), to = 1 - from;
  const int pages = 4096;
  for (int i = 0; i < pages; ++i) p.pages.where[4343][0x10000 + i * 4096] = from;
  ASSERT_TRUE(p.fixture().setProcFile("4343/maps", "10000-1010000 rw-p 00000000 00:00 0 \n").ok());
  ASSERT_TRUE(
      p.fixture().setProcFile("4343/numa_maps", "10000 default anon=4096 N" + std::to_string(from) + "=4096\n").ok());
  // Room on the other node (the container and the VM of SetUp gone), and its own node reserved.
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  ASSERT_TRUE(p.node->releaseVm(kVm).ok());
  PolicyChange change = reserving(reservedNow() | cpusOf(p.ledger->topology(), placed.mems));
  change.ledger.pinGuaranteedMemory = true;
  change.memoryMoveBytesPerSecond = 4 << 20;  // 16 MiB: 4 s
  const Clock::TimePoint started = p.clock.now();
  const auto plan = p.node->applyPolicy(change);
  ASSERT_TRUE(plan.ok()) << plan.error().message();

  int moved = 0;
  for (const auto& [page, node] : p.pages.where[4343]) moved += node == to;
  EXPECT_EQ(moved, pages);
  EXPECT_GE(p.clock.now() - started, std::chrono::seconds(4));
  // The cgroup narrowed to the new node once the pages were there; the ledger says the same.
  EXPECT_EQ(*p.fixture().read(cgroup, "cpuset.mems"), std::to_string(to));
  const StatePtr now = p.ledger->state();
  EXPECT_EQ(NumaMemory::mems(now->pod(uid(3))->containers.at("app").memory), CpuSet{to});
  EXPECT_TRUE(p.pendingOps().empty());
}

TEST_F(PolicyApplyTest, AMemoryMoveThatFailsMovesThePagesBackAndChangesNothing) {
  const ContainerPlacement placed = pinnedContainer(p, reserving(reservedNow()), exclusive("c3", 1));
  const CgroupDir cgroup{"cpuset", *CgroupPath::parse("kubepods/pod" + uid(3) + "/c3")};
  ASSERT_TRUE(p.fixture().write(cgroup, "cgroup.procs", "4343").ok());
  const int from = *placed.mems.begin();
  for (int i = 0; i < 64; ++i) p.pages.where[4343][0x10000 + i * 4096] = from;
  ASSERT_TRUE(p.fixture().setProcFile("4343/maps", "10000-50000 rw-p 00000000 00:00 0 \n").ok());
  // numa_maps is a file the fixture does not keep in step with the pages: it names both nodes, so
  // that the mapping is looked at whichever way the pages move.
  ASSERT_TRUE(p.fixture().setProcFile("4343/numa_maps", "10000 default anon=64 N0=32 N1=32\n").ok());
  ASSERT_TRUE(p.node->releasePod(uid(1)).ok());
  ASSERT_TRUE(p.node->releaseVm(kVm).ok());
  // The released VM's QEMU gone, as libvirt removes its scope.
  for (const char* h : {"cpuset", "cpu,cpuacct"}) {
    for (const char* dir : {"/vcpu0", "/emulator", ""})
      ASSERT_TRUE(p.fixture().rmdir({h, *CgroupPath::parse(std::string(kScope) + dir)}).ok());
  }
  const std::string mems = *p.fixture().read(cgroup, "cpuset.mems");
  const auto files = cgroupFiles(p.fixtureDir() + "/cgroup");
  const std::string stored = storeImage(p.memory_);
  const StatePtr before = p.ledger->state();
  PolicyChange change = reserving(reservedNow() | cpusOf(p.ledger->topology(), placed.mems));
  change.ledger.pinGuaranteedMemory = true;
  change.memoryMoveBytesPerSecond = 1 << 20;
  // The pages move; then the first write of the reconcile that narrows the cgroups fails.
  p.fs.failing = false;
  int writesBefore = 0;
  for (;; ++writesBefore) {
    ASSERT_LT(writesBefore, 100);
    p.fs.failOnceAfter(writesBefore);
    const auto plan = p.node->applyPolicy(change);
    if (plan.ok()) break;
    for (const auto& [page, node] : p.pages.where[4343]) ASSERT_EQ(node, from) << "write " << writesBefore;
    EXPECT_EQ(*p.fixture().read(cgroup, "cpuset.mems"), mems) << "write " << writesBefore;
    EXPECT_EQ(p.ledger->state(), before);
    EXPECT_EQ(storeImage(p.memory_), stored);
    EXPECT_EQ(differences(files, cgroupFiles(p.fixtureDir() + "/cgroup")), "") << "write " << writesBefore;
  }
  EXPECT_GT(writesBefore, 2);
}

TEST(PolicyApplyRefusalTest, HugepageBackedOrVmMemoryThatWouldMoveIsRefusedNamingTheTenant) {
  // Two nodes of four CPUs, each with a pool of 2 MiB hugepages.
  TopologyDescription d;
  d.numaNodes = {{0, 0, 8ULL << 30, {{2ULL << 20, 64}}}, {1, 1, 8ULL << 30, {{2ULL << 20, 64}}}};
  for (int cpu = 0; cpu < 8; ++cpu) d.cpus.push_back({cpu, cpu / 2, 0, cpu / 4, -1});
  Pipeline p(Ownership::kEverything, CgroupVersion::kV1, false,
             std::make_shared<const Topology>(std::move(Topology::create(d)).value()));
  PolicyChange pinning{*p.ledger->config(), {}, false, "pinned\n", "before\n"};
  pinning.allocatable.allocatableCpuMilli = 7000;
  ContainerSpec spec = exclusive("c3", 1);
  spec.hugepageLimits[2ULL << 20] = 4ULL << 20;
  const ContainerPlacement placed = pinnedContainer(p, pinning, spec);
  const StatePtr now = p.ledger->state();
  PolicyChange change = pinning;
  change.ledger.pinGuaranteedMemory = true;
  change.ledger.pool.reserved.count = 0;
  change.ledger.pool.reserved.cpus = now->reserved() | cpusOf(p.ledger->topology(), placed.mems);
  change.memoryMoveBytesPerSecond = 1 << 20;
  const auto refused = p.node->applyPolicy(change);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(),
              HasSubstr("(pod/" + uid(3) + "/app): its memory is bound to NUMA nodes " + placed.mems.format()));
  EXPECT_THAT(refused.error().message(), HasSubstr("backed by hugepages, which are not moved"));
  EXPECT_EQ(p.ledger->state(), now);
  // A rate of 0 refuses a memory move too.
  spec.hugepageLimits.clear();
  change.memoryMoveBytesPerSecond = 0;
  ASSERT_TRUE(p.node->releasePod(uid(3)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(4), QosClass::kGuaranteed), exclusive("c4", 1)).ok());
  const auto zero = p.node->applyPolicy(change);
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.error().message(), HasSubstr("memory_move_rate is 0"));
}

TEST_F(PolicyApplyTest, SingleNumaNodeMovesAContainerThatSpansTwoNodesAndKeepsTheRest) {
  // A container of three CPUs placed while no node had three free (policy none): it spans both.
  // Then the two CPUs that kept it off one node are given back.
  ASSERT_TRUE(p.node->releaseVm(kVm).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(6), QosClass::kGuaranteed), exclusive("c6", 2)).ok());
  const auto spanning = p.node->admitContainer(pod(uid(5), QosClass::kGuaranteed), exclusive("c5", 3));
  ASSERT_TRUE(spanning.ok()) << spanning.error().message();
  std::vector<int> nodes;
  for (const NumaNode& node : p.ledger->topology().numaNodes())
    if (node.cpus.intersects(spanning->exclusive)) nodes.push_back(node.id);
  ASSERT_EQ(nodes.size(), 2u) << spanning->exclusive.format() << " (held: " << held.format() << ")";
  ASSERT_TRUE(p.node->releasePod(uid(6)).ok());

  PolicyChange change = reserving(reservedNow());
  change.ledger.topologyManager.policy = TopologyPolicy::kSingleNumaNode;
  const auto plan = p.node->applyPolicy(change);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  ASSERT_EQ(plan->changes.size(), 1u);
  EXPECT_EQ(plan->changes[0].tenant, "pod/" + uid(5) + "/app");
  EXPECT_THAT(plan->changes[0].reason, HasSubstr("spans NUMA nodes 0,1"));
  const CpuSet after = plan->changes[0].cpusAfter;
  EXPECT_EQ(after.count(), 3);
  int nodesAfter = 0;
  for (const NumaNode& node : p.ledger->topology().numaNodes()) nodesAfter += node.cpus.intersects(after);
  EXPECT_EQ(nodesAfter, 1);
  // The rest kept: the first container where it was.
  const StatePtr applied = p.ledger->state();
  EXPECT_EQ(applied->pod(uid(1))->containers.at("app").exclusive, held);
  EXPECT_EQ(containerCpus("pod" + uid(5), "c5"), after.format());
  EXPECT_EQ(containerCpus("pod" + uid(1), "c1"), held.format());
  EXPECT_EQ(p.ledger->config()->topologyManager.policy, TopologyPolicy::kSingleNumaNode);
  EXPECT_TRUE(p.pendingOps().empty());
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
