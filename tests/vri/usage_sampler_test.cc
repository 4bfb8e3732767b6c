// The usage sampler on the fixture, beside a real ledger and decision pipeline: which tenants it
// follows, the rates it computes from the counters, cgroups that go and come back, and the v1
// memory hierarchy it may read and never writes.
#include "vri/usage_sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/directory_snapshot.h"
#include "tests/vri/decision_pipeline_harness.h"

namespace vri::testing {
namespace {

UsageSources v1Sources(bool memory) {
  UsageSources s;
  s.version = CgroupVersion::kV1;
  s.cpu = s.cpuacct = "cpu,cpuacct";
  if (memory) s.memory = "memory";
  return s;
}

class Sampling {
 public:
  explicit Sampling(Pipeline& p, UsageSources sources, size_t history = 60)
      : sampler_(
            p.fs, std::move(sources), p.layout, [&p] { return p.node->state(); }, options(history), p.clock, log_) {}
  static UsageSamplerOptions options(size_t history) {
    UsageSamplerOptions o;
    o.interval = std::chrono::seconds(1);
    o.history = history;
    return o;
  }
  FramePtr round() {
    sampler_.sampleOnce();
    return sampler_.latest();
  }
  UsageSampler& sampler() { return sampler_; }

 private:
  Logger log_{LogLevel::kError};
  UsageSampler sampler_;
};

const CgroupDir v1Cpu(const std::string& path) { return {"cpu,cpuacct", *CgroupPath::parse(path)}; }

TEST(UsageSamplerTest, FollowsTheLedgerAndTurnsCountersIntoRates) {
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 1)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kBurstable), shared("c2", 250)).ok());
  Sampling s(p, v1Sources(false), 2);
  FramePtr first = s.round();
  ASSERT_EQ(first->tenants.size(), 2u);
  const TenantSample* g = first->find("pod/" + uid(1));
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->measured);
  EXPECT_FALSE(g->rates);  // nothing to compare with yet
  EXPECT_EQ(g->label->cgroup->str(), "kubepods/pod" + uid(1));
  EXPECT_EQ(g->label->name, "default/" + uid(1));

  // One second later the kernel has counted 1.5 s for the first pod, a quarter for the second, which
  // was throttled in half of its periods.
  const std::string guaranteed = "kubepods/pod" + uid(1), burstable = "kubepods/burstable/pod" + uid(2);
  ASSERT_TRUE(p.fixture().setCounter(v1Cpu(guaranteed), "cpuacct.usage", "1500000000").ok());
  ASSERT_TRUE(p.fixture().setCounter(v1Cpu(burstable), "cpuacct.usage", "250000000").ok());
  ASSERT_TRUE(p.fixture()
                  .setCounter(v1Cpu(burstable), "cpu.stat", "nr_periods 10\nnr_throttled 5\nthrottled_time 300000000")
                  .ok());
  p.clock.advance(std::chrono::seconds(1));
  FramePtr second = s.round();
  g = second->find("pod/" + uid(1));
  const TenantSample* b = second->find("pod/" + uid(2));
  ASSERT_TRUE(g && b && g->rates && b->rates);
  EXPECT_DOUBLE_EQ(g->cpuCores, 1.5);
  EXPECT_DOUBLE_EQ(b->cpuCores, 0.25);
  EXPECT_DOUBLE_EQ(b->throttledFraction, 0.5);
  EXPECT_EQ(b->cpu.throttledNs, 300'000'000u);
  EXPECT_EQ(g->throttledFraction, 0.0);  // no periods: no limit to be throttled by
  EXPECT_FALSE(g->memoryBytes) << "memory is not read when not configured";
  EXPECT_EQ(s.sampler().stats().filesOpen, 4u);  // cpu.stat and cpuacct.usage of each

  // The released pod's files are closed; the history keeps the last two rounds.
  ASSERT_TRUE(p.node->releasePod(uid(2)).ok());
  FramePtr third = s.round();
  EXPECT_EQ(third->tenants.size(), 1u);
  EXPECT_EQ(third->find("pod/" + uid(2)), nullptr);
  EXPECT_EQ(s.sampler().stats().filesOpen, 2u);
  const std::vector<FramePtr> kept = s.sampler().recent(5);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0]->sequence, 3u);
  EXPECT_EQ(kept[1]->sequence, 2u);
}

TEST(UsageSamplerTest, ACgroupThatGoesIsOpenedAgainWhenItComesBack) {
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 1)).ok());
  Sampling s(p, v1Sources(false));
  EXPECT_TRUE(s.round()->find("pod/" + uid(1))->measured);
  const std::string pod_path = "kubepods/pod" + uid(1);
  ASSERT_TRUE(p.fixture().rmdir(v1Cpu(pod_path + "/c1")).ok());
  ASSERT_TRUE(p.fixture().rmdir(v1Cpu(pod_path)).ok());
  EXPECT_FALSE(s.round()->find("pod/" + uid(1))->measured);
  EXPECT_FALSE(s.round()->find("pod/" + uid(1))->measured);
  ASSERT_TRUE(p.fixture().mkdir(v1Cpu(pod_path)).ok());
  ASSERT_TRUE(p.fixture().setCounter(v1Cpu(pod_path), "cpuacct.usage", "42").ok());
  const TenantSample* back = s.round()->find("pod/" + uid(1));
  EXPECT_TRUE(back->measured);
  EXPECT_FALSE(back->rates) << "counters of a new cgroup are not compared with the old one's";
  EXPECT_EQ(back->cpu.usageNs, 42u);
  p.clock.advance(std::chrono::seconds(1));
  EXPECT_TRUE(s.round()->find("pod/" + uid(1))->rates);
}

TEST(UsageSamplerTest, TheV1MemoryHierarchyIsReadOnlyAndOnlyWhenConfigured) {
  Pipeline p;
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kGuaranteed), exclusive("c1", 1)).ok());
  ASSERT_TRUE(p.node->admitContainer(pod(uid(2), QosClass::kGuaranteed), exclusive("c2", 1)).ok());
  // vrid does not manage memory here: the pod's memory cgroup is the runtime's, made beside vrid.
  const CgroupDir memory{"memory", *CgroupPath::parse("kubepods/pod" + uid(1))};
  ASSERT_TRUE(p.fixture().mkdir({"memory", *CgroupPath::parse("kubepods")}).ok());
  ASSERT_TRUE(p.fixture().mkdir(memory).ok());
  ASSERT_TRUE(p.fixture().setCounter(memory, "memory.usage_in_bytes", "1048576").ok());
  const std::string hierarchy = p.fixtureDir() + "/cgroup/memory";
  const auto before = snapshotFiles(hierarchy);

  Sampling reading(p, v1Sources(true));
  FramePtr frame = reading.round();
  EXPECT_EQ(frame->find("pod/" + uid(1))->memoryBytes, 1048576u);
  EXPECT_FALSE(frame->find("pod/" + uid(2))->memoryBytes) << "no memory cgroup: not measured";
  EXPECT_TRUE(frame->find("pod/" + uid(2))->measured) << "its CPU still is";
  EXPECT_EQ(snapshotFiles(hierarchy), before) << "the sampler wrote in the memory hierarchy";

  // A memory cgroup that comes later is found within a few rounds.
  const CgroupDir later{"memory", *CgroupPath::parse("kubepods/pod" + uid(2))};
  ASSERT_TRUE(p.fixture().mkdir(later).ok());
  ASSERT_TRUE(p.fixture().setCounter(later, "memory.usage_in_bytes", "2048").ok());
  std::optional<uint64_t> found;
  for (int i = 0; i < 11 && !found; ++i) found = reading.round()->find("pod/" + uid(2))->memoryBytes;
  EXPECT_EQ(found, 2048u);

  Sampling not_reading(p, v1Sources(false));
  EXPECT_FALSE(not_reading.round()->find("pod/" + uid(1))->memoryBytes);
}

TEST(UsageSamplerTest, V2CountsCpuThrottlingAndMemoryInOneHierarchy) {
  Pipeline p(Ownership::kEverything, CgroupVersion::kV2);
  ContainerSpec limited = shared("c1", 500);
  limited.memoryLimitBytes = 128ULL << 20;  // the pod's cgroup gets the memory controller
  ASSERT_TRUE(p.node->admitContainer(pod(uid(1), QosClass::kBurstable), limited).ok());
  UsageSources v2;
  v2.memory = "";
  Sampling s(p, v2);
  const CgroupDir dir{"", *CgroupPath::parse("kubepods/burstable/pod" + uid(1))};
  ASSERT_TRUE(s.round()->find("pod/" + uid(1))->measured);
  ASSERT_TRUE(p.fixture()
                  .setCounter(dir, "cpu.stat",
                              "usage_usec 500000\nuser_usec 400000\nsystem_usec 100000\nnr_periods 20\n"
                              "nr_throttled 4\nthrottled_usec 80000")
                  .ok());
  ASSERT_TRUE(p.fixture().setCounter(dir, "memory.current", "73400320").ok());
  p.clock.advance(std::chrono::milliseconds(500));
  const TenantSample* t = s.round()->find("pod/" + uid(1));
  ASSERT_TRUE(t->rates);
  EXPECT_DOUBLE_EQ(t->cpuCores, 1.0);  // 0.5 s of CPU in 0.5 s
  EXPECT_DOUBLE_EQ(t->throttledFraction, 0.2);
  EXPECT_EQ(t->cpu.throttledNs, 80'000'000u);
  EXPECT_EQ(t->memoryBytes, 73400320u);
}

TEST(UsageSamplerTest, AVmIsMeasuredInItsScopeOnceItRuns) {
  Pipeline p(Ownership::kCpusetsAndMachine);
  const std::string uuid = "8f0c0001-0000-4000-8000-000000000001";
  ASSERT_TRUE(p.node->admitVm(vm(uuid, 1, VmCpuPolicy::kShared)).ok());
  Sampling s(p, v1Sources(false));
  const TenantSample* before = s.round()->find("vm/" + uuid);
  ASSERT_NE(before, nullptr);
  EXPECT_FALSE(before->measured) << "admitted, not started: no scope yet";
  const std::string scope = "machine/qemu-1-web.libvirt-qemu";
  p.runQemu(scope, 4242, uuid);
  ASSERT_TRUE(p.node->vmStarted(uuid, 4242).ok());
  ASSERT_TRUE(p.fixture().setCounter(v1Cpu(scope), "cpuacct.usage", "7000").ok());
  const TenantSample* running = s.round()->find("vm/" + uuid);
  EXPECT_TRUE(running->measured);
  EXPECT_EQ(running->label->cgroup->str(), scope);
  EXPECT_EQ(running->label->name, "vm-8f0c");
  EXPECT_EQ(running->cpu.usageNs, 7000u);
}

// libvirt on a hybrid v1 host may leave QEMU in cpuacct's root: the VM's CPU time is then read from
// the unified hierarchy's cpu.stat, and where neither has it the VM is not measured (never a 0).
TEST(UsageSamplerTest, CpuTimeThatCpuacctLacksIsReadFromTheUnifiedHierarchy) {
  Pipeline p(Ownership::kCpusetsAndMachine);
  const std::string uuid = "8f0c0001-0000-4000-8000-000000000001";
  ASSERT_TRUE(p.node->admitVm(vm(uuid, 1, VmCpuPolicy::kShared)).ok());
  const std::string scope = "machine/qemu-1-web.libvirt-qemu";
  p.runQemu(scope, 4242, uuid);
  ASSERT_TRUE(p.node->vmStarted(uuid, 4242).ok());
  UsageSources hybrid = v1Sources(false);
  hybrid.cpuacct = "hugetlb";  // where the scope is not
  hybrid.unified = "pids";     // stands in for /sys/fs/cgroup/unified
  Sampling s(p, hybrid);
  EXPECT_FALSE(s.round()->find("vm/" + uuid)->measured) << "no CPU time anywhere: not measured";
  const CgroupDir unified{"pids", *CgroupPath::parse(scope)};
  ASSERT_TRUE(p.fixture().mkdir({"pids", *CgroupPath::parse("machine")}).ok());
  ASSERT_TRUE(p.fixture().mkdir(unified).ok());
  ASSERT_TRUE(p.fixture().setCounter(unified, "cpu.stat", "usage_usec 5\nuser_usec 5\nsystem_usec 0").ok());
  const TenantSample* t = s.round()->find("vm/" + uuid);
  EXPECT_TRUE(t->measured);
  EXPECT_EQ(t->cpu.usageNs, 5000u);
}

TEST(UsageSamplerTest, EachCpusBusyShareComesFromProcStat) {
  Pipeline p;
  ASSERT_TRUE(
      p.fixture().setProcFile("stat", "cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0\n").ok());
  Sampling s(p, v1Sources(false));
  ASSERT_EQ(s.round()->cpus.size(), 2u);
  ASSERT_TRUE(p.fixture()
                  .setProcFile("stat", "cpu  0 0 0 0 0 0 0 0\ncpu0 175 0 0 125 0 0 0 0\ncpu1 10 0 0 290 0 0 0 0\n")
                  .ok());
  p.clock.advance(std::chrono::seconds(1));
  const FramePtr frame = s.round();
  EXPECT_DOUBLE_EQ(frame->cpus[0].busy, 0.75);
  EXPECT_DOUBLE_EQ(frame->cpus[1].busy, 0.1);
  EXPECT_EQ(frame->cpus[0].busyNs, 1'750'000'000u);
}

TEST(UsageSamplerTest, ItsThreadPublishesRoundsToWaitersUntilStopped) {
  Pipeline p;
  Logger log(LogLevel::kError);
  UsageSamplerOptions options;
  options.interval = std::chrono::milliseconds(100);
  UsageSampler sampler(
      p.fs, v1Sources(false), p.layout, [&p] { return p.node->state(); }, options, steadyClock(), log);
  sampler.start();
  const FramePtr first = sampler.next(0, std::chrono::seconds(10));
  ASSERT_NE(first, nullptr);
  const FramePtr later = sampler.next(first->sequence, std::chrono::seconds(10));
  ASSERT_NE(later, nullptr);
  EXPECT_GT(later->sequence, first->sequence);
  sampler.stop();
  EXPECT_TRUE(sampler.stopped());
  EXPECT_EQ(sampler.next(later->sequence, std::chrono::seconds(10)), nullptr) << "a waiter is let go at once";
}

}  // namespace
}  // namespace vri::testing
