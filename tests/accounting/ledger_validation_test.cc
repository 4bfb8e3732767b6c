// The start-up check: the ledger against a node scanned from the cgroupfs fixture.
#include "accounting/ledger_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "accounting/node_allocatable.h"
#include "accounting/sqlite_ledger_store.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr char kVmUuid[] = "3f2c1b0a-9e8d-4c7b-a695-0f1e2d3c4b5a";
constexpr char kStoppedUuid[] = "00000000-1111-4222-8333-444444444444";

CgroupPath path(const std::string& text) { return *CgroupPath::parse(text); }

void makeGroup(FixtureCgroupFs& fs, const CgroupPath& p, const CpuSet& cpus) {
  CgroupPath at;
  for (const std::string& part : p.components()) {
    const CgroupPath parent = at;
    at = *at.child(part);
    if (fs.exists({"cpuset", at})) continue;
    ASSERT_TRUE(fs.mkdir({"cpuset", at}).ok());
    ASSERT_TRUE(fs.write({"cpuset", at}, "cpuset.cpus", *fs.read({"cpuset", parent}, "cpuset.cpus")).ok());
    ASSERT_TRUE(fs.write({"cpuset", at}, "cpuset.mems", "0").ok());
  }
  ASSERT_TRUE(fs.write({"cpuset", p}, "cpuset.cpus", cpus.format()).ok());
}

// Two cores of two threads, CPU 0 reserved: the node of the smaller cases.
std::shared_ptr<const Topology> fourCpus() {
  return std::make_shared<const Topology>(std::move(loadSyntheticTopology("pack:1 numa:1 core:2 pu:2")).value());
}

std::unique_ptr<Ledger> openLedger(const testing::TempDir& tmp, std::shared_ptr<const Topology> topo,
                                   const CpuSet& reserved) {
  LedgerConfig config;
  config.pool.reserved.cpus = reserved;
  return std::move(Ledger::open(std::move(topo), config,
                                std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
      .value();
}

TEST(LedgerValidationTest, ReleasesWhatIsGoneAndAdoptsWhatRuns) {
  testing::TempDir tmp;
  const auto topo =
      std::make_shared<const Topology>(std::move(loadSyntheticTopology("pack:1 numa:1 core:4 pu:2")).value());
  LedgerConfig config;
  config.allocatableMemoryBytes = 8ULL << 30;
  auto ledger =
      std::move(
          Ledger::open(topo, config, std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
          .value();
  ASSERT_TRUE(ledger
                  ->apply(&Ledger::decideAdmitContainer, {"gone", "ns/gone", QosClass::kBurstable, 0, 0},
                          {"web", "aaa1", false, 200, 0, std::nullopt, std::nullopt}, kNoneFinished)
                  .ok());
  const CpuSet app = ledger
                         ->apply(&Ledger::decideAdmitContainer, {"alive", "ns/alive", QosClass::kGuaranteed, 0, 0},
                                 {"app", "bbb1", false, 2000, 2000, 1ULL << 30, std::nullopt}, kNoneFinished)
                         ->exclusive;
  VmSpec stopped;
  stopped.uuid = kStoppedUuid;
  stopped.cpu.name = "stopped";
  stopped.cpu.vcpus = 1;
  stopped.cpu.cpuPolicy = VmCpuPolicy::kDedicated;
  ASSERT_TRUE(ledger->apply(&Ledger::decideAdmitVm, stopped).ok());

  // The node as it runs: "alive" with its CPUs, a Burstable pod and a VM nobody told the ledger about.
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  // Where the strangers sit: not on CPUs the ledger holds (the stopped VM keeps its CPU until it starts).
  const CpuSet others = topo->onlineCpus() - app - ledger->findVm(kStoppedUuid)->placement.exclusive;
  const CpuSet stranger_cpus = CpuSet{others.last()} | CpuSet{(others - CpuSet{others.last()}).last()};
  const int vcpu_cpu = others.first();
  makeGroup(fs, path("kubepods/podalive/bbb1"), app);
  makeGroup(fs, path("kubepods/burstable/podstranger/ccc1"), stranger_cpus);
  makeGroup(fs, path("kubepods/besteffort/podbe/ddd1"), topo->onlineCpus());
  const CgroupPath scope = path("machine/qemu-5-vmx.libvirt-qemu");
  makeGroup(fs, *scope.child("emulator"), others);
  makeGroup(fs, *scope.child("vcpu0"), CpuSet{vcpu_cpu});
  makeGroup(fs, *scope.child("vcpu1"), others);
  ASSERT_TRUE(fs.write({"cpuset", *scope.child("emulator")}, "cgroup.procs", "4100").ok());
  ASSERT_TRUE(fs.setProcFile("4100/cgroup", "3:cpuset:/machine/qemu-5-vmx.libvirt-qemu/emulator\n").ok());
  ASSERT_TRUE(fs.setProcFile("4100/cmdline", std::string("qemu\0-uuid\0", 11) + kVmUuid + std::string("\0", 1)).ok());
  const auto backend = makeV1Backend({{"cpuset", "cpuset"}});
  auto scan = scanNode(fs, *backend, TreeLayout{});
  ASSERT_TRUE(scan.ok()) << scan.error().message();

  const ValidationReport report = validateLedger(*ledger, *scan);
  EXPECT_TRUE(report.unresolved.empty()) << report.unresolved.front();
  EXPECT_THAT(report.released, Contains("pod ns/gone: its cgroups are gone; released"));
  // libvirt admits at prepare and starts QEMU after: a restart in between keeps the VM.
  EXPECT_THAT(report.waiting, Contains(HasSubstr("VM stopped: admitted, QEMU not running (yet); kept")));
  EXPECT_THAT(report.adopted, Contains("container ccc1 of pod stranger: adopted with CPUs " + stranger_cpus.format()));
  EXPECT_THAT(report.adopted, Contains("container ddd1 of pod be: adopted in the shared pool"));
  const StatePtr s = ledger->state();
  EXPECT_FALSE(s->pods.count("gone"));
  EXPECT_EQ(s->pods.at("alive").containers.at("app").exclusive, app);
  EXPECT_EQ(s->pods.at("stranger").containers.at("ccc1").exclusive, stranger_cpus);
  ASSERT_TRUE(s->vms.count(kVmUuid));
  EXPECT_EQ(s->vms.at(kVmUuid).placement.vcpuCpus, (std::map<int, int>{{0, vcpu_cpu}, {1, VmCpuPlacement::kShared}}));
  EXPECT_EQ(s->vms.at(kVmUuid).spec.cpu.cpuPolicy, VmCpuPolicy::kMixed);
  auto checked = checkLedgerInvariants(*s, *topo, config);
  ASSERT_TRUE(checked.ok()) << checked.error().message();

  // A second check finds nothing to do; a restart keeps what was adopted.
  const ValidationReport again = validateLedger(*ledger, *scan);
  EXPECT_TRUE(again.released.empty()) << again.released.front();
  EXPECT_TRUE(again.adopted.empty()) << again.adopted.front();
  ledger.reset();
  auto reopened =
      std::move(
          Ledger::open(topo, config, std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
          .value();
  const StatePtr now = reopened->state();
  EXPECT_EQ(now->grants().size(), s->grants().size());
}

// A node taken over with its pods running: vrid's start-up adopts them from the cgroups, by ids (the
// sandbox's cgroup among the containers); the runtime's names come later, through the shim's or the
// plugin's sync, and the same CPUs stay with the same containers under those names.
TEST(LedgerValidationTest, WhatTheCgroupsAdoptedTheRuntimeNamesOnTheSameCpus) {
  testing::TempDir tmp;
  const auto topo = fourCpus();
  LedgerConfig config;
  config.pool.reserved.cpus = CpuSet{0};
  auto ledger =
      std::move(
          Ledger::open(topo, config, std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
          .value();
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  makeGroup(fs, path("kubepods/podg1/aaa1"), CpuSet{3});  // kubelet's static policy: the app on CPU 3
  makeGroup(fs, path("kubepods/podg1/5a5a1"), CpuSet::parse("0-2").value());  // its sandbox, on the default set
  makeGroup(fs, path("kubepods/burstable/podb1/bbb1"), CpuSet::parse("0-2").value());
  const auto backend = makeV1Backend({{"cpuset", "cpuset"}});
  auto scan = scanNode(fs, *backend, TreeLayout{});
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  const ValidationReport report = validateLedger(*ledger, *scan);
  EXPECT_THAT(report.adopted, Contains("container aaa1 of pod g1: adopted with CPUs 3"));
  StatePtr s = ledger->state();
  EXPECT_EQ(s->pods.at("g1").spec.name, "adopted/g1");

  // The runtime names the pod and its sandbox: the sandbox is no container; the app keeps CPU 3.
  const PodSpec g1{"g1", "default/g1-node", QosClass::kGuaranteed, 0, 0};
  ASSERT_TRUE(ledger->apply(&Ledger::decideBindSandbox, g1, std::string("5a5a1")).ok());
  s = ledger->state();
  EXPECT_EQ(s->pods.at("g1").spec.name, "default/g1-node");
  EXPECT_EQ(s->pods.at("g1").sandboxId, "5a5a1");
  EXPECT_FALSE(s->pods.at("g1").containers.count("5a5a1"));
  ASSERT_NE(s->runtimeOwner("5a5a1"), nullptr);
  EXPECT_TRUE(s->runtimeOwner("5a5a1")->isSandbox());
  auto adopted = ledger->apply(&Ledger::decideAdoptContainer, g1,
                               ContainerSpec{"app", "aaa1", false, 1000, 1000, std::nullopt, std::nullopt}, CpuSet{3},
                               std::vector<int>{});
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  s = ledger->state();
  EXPECT_FALSE(s->pods.at("g1").containers.count("aaa1"));
  EXPECT_EQ(s->pods.at("g1").containers.at("app").exclusive, CpuSet{3});
  EXPECT_EQ(s->runtimeOwner("aaa1")->container, "app");
  EXPECT_EQ(s->grants().count("pod/g1/aaa1"), 0u);
  EXPECT_EQ(s->shared(), CpuSet::parse("0-2").value());
  auto checked = checkLedgerInvariants(*s, *topo, config);
  ASSERT_TRUE(checked.ok()) << checked.error().message();
  // A pod the runtime made (not from the cgroups) keeps its sandbox: a second one is refused as before.
  EXPECT_FALSE(ledger->apply(&Ledger::decideBindSandbox, g1, std::string("aaa1")).ok());
}

// kubelet's static memory manager bound a Guaranteed container's memory to NUMA node 0 of two: adopted,
// it keeps that node (its memory taken there in the books, its cpuset.mems unchanged), and keeps it
// again when the runtime names it, now with its memory limit.
TEST(LedgerValidationTest, AContainersMemoryNodesAreAdoptedWithIt) {
  testing::TempDir tmp;
  const auto topo = std::make_shared<const Topology>(
      std::move(loadSyntheticTopology("pack:1 numa:2(memory=8GiB) core:2 pu:2")).value());  // 0-3, 4-7
  LedgerConfig config;
  config.pool.reserved.cpus = CpuSet{0};
  auto ledger =
      std::move(
          Ledger::open(topo, config, std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
          .value();
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0, 1})).value();
  makeGroup(fs, path("kubepods/podg1/aaa1"), CpuSet{3});  // cpuset.mems 0, as kubelet wrote it
  makeGroup(fs, path("kubepods/burstable/podb1/bbb1"), CpuSet::parse("0-2,4-7").value());
  for (const char* group :
       {"kubepods", "kubepods/burstable", "kubepods/burstable/podb1", "kubepods/burstable/podb1/bbb1"})
    ASSERT_TRUE(fs.write({"cpuset", path(group)}, "cpuset.mems", "0-1").ok()) << group;
  auto scan = scanNode(fs, *makeV1Backend({{"cpuset", "cpuset"}}), TreeLayout{});
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  validateLedger(*ledger, *scan);
  StatePtr s = ledger->state();
  EXPECT_EQ(NumaMemory::mems(s->pods.at("g1").containers.at("aaa1").memory), CpuSet{0});
  EXPECT_TRUE(s->pods.at("b1").containers.at("bbb1").memory.empty()) << "every node: bound to none";

  const PodSpec g1{"g1", "default/g1-node", QosClass::kGuaranteed, 0, 0};
  auto adopted = ledger->apply(&Ledger::decideAdoptContainer, g1,
                               ContainerSpec{"app", "aaa1", false, 1000, 1000, 64ULL << 20, 64ULL << 20}, CpuSet{3},
                               std::vector<int>{});
  ASSERT_TRUE(adopted.ok()) << adopted.error().message();
  s = ledger->state();
  EXPECT_EQ(s->pods.at("g1").containers.at("app").memory, (MemoryBlocks{{0, {{kRegularMemory, 64ULL << 20}}}}));
  EXPECT_EQ(s->numa.cell(0, kRegularMemory).assigned, 64ULL << 20);
  EXPECT_EQ(s->numa.cell(1, kRegularMemory).assigned, 0u);
  auto checked = checkLedgerInvariants(*s, *topo, config);
  ASSERT_TRUE(checked.ok()) << checked.error().message();
}

TEST(LedgerValidationTest, WhatCannotBeAdoptedIsReported) {
  testing::TempDir tmp;
  const auto topo = fourCpus();
  auto ledger = openLedger(tmp, topo, CpuSet{0});
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  makeGroup(fs, path("kubepods/podx/eee1"), CpuSet{0});                     // pinned to a reserved CPU
  makeGroup(fs, path("kubepods/burstable/pody/fff1"), topo->onlineCpus());  // the shared pool, as the node runs it
  makeGroup(fs, path("kubepods/burstable/pody/ggg1"), topo->onlineCpus());
  makeGroup(fs, path("machine/qemu-7-nouuid.libvirt-qemu/vcpu0"), CpuSet{1});
  auto scan = scanNode(fs, *makeV1Backend({{"cpuset", "cpuset"}}), TreeLayout{});
  ASSERT_TRUE(scan.ok());
  const ValidationReport report = validateLedger(*ledger, *scan);
  ASSERT_EQ(report.unresolved.size(), 3u);
  EXPECT_THAT(report.unresolved[0], HasSubstr("container eee1 of pod x: not adopted"));
  EXPECT_THAT(report.unresolved[0], HasSubstr("are reserved"));
  EXPECT_THAT(report.unresolved[1], HasSubstr("no UUID found; not adopted"));
  EXPECT_THAT(report.unresolved[2], HasSubstr("no QEMU process"));
}

// An admit cut off after its commit, before its container's cgroup was made: the pod's cgroup exists, the
// container's does not. Both go, not an empty pod that nothing would ever release.
TEST(LedgerValidationTest, APodWhoseContainersAreAllGoneGoesWithThem) {
  testing::TempDir tmp;
  const auto topo = fourCpus();
  auto ledger = openLedger(tmp, topo, CpuSet{0});
  const PodSpec pod{"cut", "ns/cut", QosClass::kBurstable, 0, 0};
  ASSERT_TRUE(ledger
                  ->apply(&Ledger::decideAdmitContainer, pod,
                          {"web", "aaa1", false, 100, 0, std::nullopt, std::nullopt}, kNoneFinished)
                  .ok());
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  makeGroup(fs, path("kubepods/burstable/podcut"), topo->onlineCpus());
  auto scan = scanNode(fs, *makeV1Backend({{"cpuset", "cpuset"}}), TreeLayout{});
  ASSERT_TRUE(scan.ok());
  const ValidationReport report = validateLedger(*ledger, *scan);
  EXPECT_THAT(report.released, Contains(HasSubstr("container ns/cut/web: its cgroup is gone")));
  EXPECT_THAT(report.released, Contains(HasSubstr("pod ns/cut: none of its containers is left")));
  const StatePtr now = ledger->state();
  EXPECT_EQ(now->pod("cut"), nullptr);
}

// A release committed just before a crash, its cgroup still there: a pod run through the shim
// does not get the container back under its runtime id; the shim adopts what containerd still runs.
TEST(LedgerValidationTest, AShimRunPodsUnknownContainerIsLeftToTheShim) {
  testing::TempDir tmp;
  const auto topo = fourCpus();
  auto ledger = openLedger(tmp, topo, CpuSet{0});
  const PodSpec pod{"shim", "ns/shim", QosClass::kBurstable, 0, 0};
  ASSERT_TRUE(ledger->apply(&Ledger::decideBindSandbox, pod, "5a5a").ok());
  ASSERT_TRUE(ledger
                  ->apply(&Ledger::decideAdmitContainer, pod, {"web", "aaa1", false, 7, 0, std::nullopt, std::nullopt},
                          kNoneFinished)
                  .ok());
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  makeGroup(fs, path("kubepods/burstable/podshim/5a5a"), topo->onlineCpus());
  makeGroup(fs, path("kubepods/burstable/podshim/aaa1"), topo->onlineCpus());
  makeGroup(fs, path("kubepods/burstable/podshim/bbb1"), topo->onlineCpus());  // released before the crash
  auto scan = scanNode(fs, *makeV1Backend({{"cpuset", "cpuset"}}), TreeLayout{});
  ASSERT_TRUE(scan.ok());
  const ValidationReport report = validateLedger(*ledger, *scan);
  EXPECT_TRUE(report.adopted.empty()) << report.adopted.front();
  EXPECT_THAT(report.waiting, Contains(HasSubstr("container bbb1 of pod shim: not adopted")));
  const StatePtr now = ledger->state();
  const PodRecord* kept = now->pod("shim");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->containers.size(), 1u);
  EXPECT_EQ(kept->containers.at("web").spec.cpuRequestMilli, 7);
}

// A node taken over from kubelet: its shared containers already run without the
// exclusive CPUs, which the ledger has never heard of.
TEST(LedgerValidationTest, ReadsTheSharedPoolOffTheNode) {
  testing::TempDir tmp;
  const auto topo =
      std::make_shared<const Topology>(std::move(loadSyntheticTopology("pack:1 numa:1 core:4 pu:2")).value());
  auto ledger =
      std::move(Ledger::open(topo, LedgerConfig{},
                             std::move(SqliteLedgerStore::open(tmp.sub("l.db"), Durability::kNormal)).value()))
          .value();
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), topo->onlineCpus(), CpuSet{0})).value();
  const CpuSet shared = *CpuSet::parse("0-1,4-7");
  makeGroup(fs, path("kubepods/burstable/poda/c1"), shared);
  makeGroup(fs, path("kubepods/burstable/podb/c2"), shared);
  makeGroup(fs, path("kubepods/podg/c3"), *CpuSet::parse("2-3"));
  auto scan = scanNode(fs, *makeV1Backend({{"cpuset", "cpuset"}}), TreeLayout{});
  ASSERT_TRUE(scan.ok());
  const ValidationReport report = validateLedger(*ledger, *scan);
  EXPECT_TRUE(report.unresolved.empty()) << report.unresolved.front();
  const StatePtr s = ledger->state();
  EXPECT_TRUE(s->pods.at("a").containers.at("c1").exclusive.empty());
  EXPECT_TRUE(s->pods.at("b").containers.at("c2").exclusive.empty());
  EXPECT_EQ(s->pods.at("g").containers.at("c3").exclusive.format(), "2-3");
  EXPECT_EQ(s->shared(), shared);
}

TEST(NodeAllocatableTest, SubtractsReservationsAsKubeletDoes) {
  const Topology topo = std::move(loadSyntheticTopology("pack:1 numa:2(memory=4GiB) core:4 pu:2")).value();
  NodeReservations r{*Quantity::parse("500m"), *Quantity::parse("1"), *Quantity::parse("1Gi"),
                     *Quantity::parse("512Mi"), *Quantity::parse("100Mi")};
  auto node = computeAllocatable(topo, r);
  ASSERT_TRUE(node.ok()) << node.error().message();
  EXPECT_EQ(node->capacityCpuMilli, 16000);
  EXPECT_EQ(node->allocatableCpuMilli, 14500);
  EXPECT_EQ(node->reservedCpuCount, 2);
  EXPECT_EQ(node->capacityMemoryBytes, 8ULL << 30);
  EXPECT_EQ(node->allocatableMemoryBytes, (8ULL << 30) - (1ULL << 30) - (512ULL << 20) - (100ULL << 20));
  r.kubeReservedCpu = *Quantity::parse("16");
  EXPECT_THAT(computeAllocatable(topo, r).error().message(), HasSubstr("leave nothing"));
}

}  // namespace
}  // namespace vri
