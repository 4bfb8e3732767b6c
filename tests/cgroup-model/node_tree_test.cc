// The node tree: kubelet's values, both kubelet drivers, every libvirt layout,
// applied to the fixture in both cgroup versions.
#include "cgroup-model/node_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

CgroupPath path(const std::string& text) { return *CgroupPath::parse(text); }
CpuSet cpus(const char* list) { return *CpuSet::parse(list); }

constexpr char kGuaranteedUid[] = "11111111-2222-3333-4444-555555555555";
constexpr char kBurstableUid[] = "bbbbbbbb-2222-3333-4444-555555555555";
constexpr char kBestEffortUid[] = "eeeeeeee-2222-3333-4444-555555555555";

NodeResources node() {
  NodeResources n;
  n.sharedCpus = cpus("0-3");
  n.memoryNodes = cpus("0");
  n.allocatableCpuMilli = 7000;
  n.allocatableMemoryBytes = 8ULL << 30;
  return n;
}

std::vector<PodCgroup> pods() {
  PodCgroup guaranteed{kGuaranteedUid,
                       QosClass::kGuaranteed,
                       {{"app", 2000, 2000, 1ULL << 30, cpus("4-5"), std::nullopt}},
                       100,
                       64ULL << 20,
                       {}};
  PodCgroup burstable{kBurstableUid,
                      QosClass::kBurstable,
                      {{"web", 500, 1000, 512ULL << 20, std::nullopt, std::nullopt},
                       {"log", 250, 0, std::nullopt, std::nullopt, std::nullopt}},
                      0,
                      0,
                      {}};
  PodCgroup besteffort{
      kBestEffortUid, QosClass::kBestEffort, {{"batch", 0, 0, std::nullopt, std::nullopt, std::nullopt}}, 0, 0, {}};
  return {guaranteed, burstable, besteffort};
}

VmCgroup vm(const CgroupPath& scope) {
  VmCgroup v;
  v.scope = scope;
  v.cpuRequestMilli = 2000;
  v.vcpuCpus = {{0, 6}, {1, std::nullopt}};
  v.emulatorCpus = cpus("7");
  v.iothreadCpus = {{1, std::nullopt}};
  return v;
}

TEST(NodeTreeTest, KubeletValuesWhenVriOwnsEverything) {
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  const CgroupPath scope = path("machine/qemu-3-web.libvirt-qemu");
  auto tree = buildDesiredTree(layout, node(), pods(), {vm(scope)});
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  const auto& c = tree->cgroups;
  EXPECT_EQ(tree->managedRoots, std::vector<CgroupPath>{path("kubepods")});
  EXPECT_EQ(tree->adoptedRoots, std::vector<CgroupPath>{path("machine")});
  // kubepods: allocatable CPU as shares and the shared pool plus the pods' exclusive CPUs.
  EXPECT_EQ(c.at(path("kubepods")).settings.shares->value, 7168u);
  EXPECT_EQ(c.at(path("kubepods")).settings.cpus->format(), "0-5");
  EXPECT_EQ(c.at(path("kubepods")).settings.memoryMax->value, 8ULL << 30);
  // QoS parents: Burstable sums its pods' requests, BestEffort is 2.
  EXPECT_EQ(c.at(path("kubepods/burstable")).settings.shares->value, 768u);
  EXPECT_EQ(c.at(path("kubepods/besteffort")).settings.shares->value, 2u);
  // The Guaranteed pod sits directly under kubepods; its values include the overhead.
  const auto& g = c.at(path(std::string("kubepods/pod") + kGuaranteedUid)).settings;
  EXPECT_EQ(g.shares->value, 2150u);
  EXPECT_EQ(*g.cpuMax->quotaUs, 210000);
  EXPECT_EQ(*g.memoryMax->value, (1ULL << 30) + (64ULL << 20));
  EXPECT_EQ(g.cpus->format(), "0-5");
  EXPECT_EQ(c.at(path(std::string("kubepods/pod") + kGuaranteedUid + "/app")).settings.cpus->format(), "4-5");
  // The Burstable pod: no pod quota or memory limit, as one container declares none.
  const auto& b = c.at(path(std::string("kubepods/burstable/pod") + kBurstableUid)).settings;
  EXPECT_FALSE(b.cpuMax.has_value());
  EXPECT_FALSE(b.memoryMax.has_value());
  const auto& web = c.at(path(std::string("kubepods/burstable/pod") + kBurstableUid + "/web")).settings;
  EXPECT_EQ(web.shares->value, 512u);
  EXPECT_EQ(*web.cpuMax->quotaUs, 100000);
  EXPECT_EQ(web.cpus->format(), "0-3");
  EXPECT_EQ(c.at(path(std::string("kubepods/besteffort/pod") + kBestEffortUid)).settings.shares->value, 2u);
  // The machine partition weighs in with VM requests against pod requests: 7168 x 2000 / 2850.
  EXPECT_EQ(c.at(path("machine")).settings.shares->value, 5030u);
  EXPECT_EQ(c.at(path("machine")).settings.cpus->format(), "0-3,6-7");
  EXPECT_EQ(c.at(scope).settings.shares->value, 2048u);
  EXPECT_EQ(c.at(path("machine/qemu-3-web.libvirt-qemu/vcpu0")).settings.cpus->format(), "6");
  EXPECT_TRUE(c.at(path("machine/qemu-3-web.libvirt-qemu/vcpu0")).threaded);
  EXPECT_EQ(c.at(path("machine/qemu-3-web.libvirt-qemu/vcpu1")).settings.cpus->format(), "0-3");
  EXPECT_EQ(c.at(path("machine/qemu-3-web.libvirt-qemu/emulator")).settings.cpus->format(), "7");
  EXPECT_EQ(c.at(path("machine/qemu-3-web.libvirt-qemu/iothread1")).settings.cpus->format(), "0-3");
}

TEST(NodeTreeTest, ASandboxStaysOnTheSharedPoolAndIsNotAContainer) {
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  std::vector<PodCgroup> all = pods();
  all[0].sandboxId = "pause01";
  auto tree = buildDesiredTree(layout, node(), all, {});
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  const std::string pod = std::string("kubepods/pod") + kGuaranteedUid;
  const auto& sandbox = tree->cgroups.at(path(pod + "/pause01")).settings;
  EXPECT_EQ(sandbox.cpus->format(), "0-3");  // the shared pool, not the pod's exclusive CPUs
  EXPECT_EQ(sandbox.shares->value, 2u);
  EXPECT_FALSE(sandbox.cpuMax.has_value());
  // The pod's own values still come from its containers only: a quota and a memory limit.
  const auto& g = tree->cgroups.at(path(pod)).settings;
  EXPECT_EQ(*g.cpuMax->quotaUs, 210000);
  EXPECT_EQ(*g.memoryMax->value, (1ULL << 30) + (64ULL << 20));
}

TEST(NodeTreeTest, ByDefaultOnlyCpusetsOnTheKubeletSide) {
  auto tree = buildDesiredTree(TreeLayout{}, node(), pods(), {});
  ASSERT_TRUE(tree.ok());
  EXPECT_TRUE(tree->managedRoots.empty());
  for (const auto& [p, spec] : tree->cgroups) {
    if (!p.isWithin(path("kubepods"))) continue;
    EXPECT_TRUE(spec.settings.cpus.has_value()) << p.str();
    EXPECT_FALSE(spec.settings.shares.has_value()) << p.str();
    EXPECT_FALSE(spec.settings.memoryMax.has_value()) << p.str();
  }
  EXPECT_EQ(tree->cgroups.at(path("machine")).settings.shares->value, 2u);  // no VM asks for anything
}

TEST(NodeTreeTest, RefusesHostileOrInconsistentInput) {
  auto bad = pods();
  bad[1].uid = "../../etc";
  EXPECT_THAT(buildDesiredTree(TreeLayout{}, node(), bad, {}).error().message(), HasSubstr("invalid pod UID"));
  bad = pods();
  bad[2].containers[0].id = "a/b";
  EXPECT_THAT(buildDesiredTree(TreeLayout{}, node(), bad, {}).error().message(), HasSubstr("invalid container id"));
  bad = pods();
  bad[0].containers[0].exclusiveCpus = cpus("3-4");
  EXPECT_THAT(buildDesiredTree(TreeLayout{}, node(), bad, {}).error().message(), HasSubstr("overlap the shared pool"));
  EXPECT_THAT(buildDesiredTree(TreeLayout{}, node(), {}, {vm(path("system.slice/evil"))}).error().message(),
              HasSubstr("is not directly under"));
}

struct LayoutCase {
  const char* name;
  CgroupVersion version;
  KubeletDriver driver;
  LibvirtLayout libvirt;
  const char* partition;
};

class NodeTreeApplyTest : public ::testing::TestWithParam<LayoutCase> {};

// Builds the whole tree on the fixture (libvirt's scope made first, as libvirt
// would), then finds nothing left to do.
TEST_P(NodeTreeApplyTest, AppliesAndConverges) {
  const LayoutCase& lc = GetParam();
  testing::TempDir tmp;
  auto fs =
      std::move(lc.version == CgroupVersion::kV1 ? FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-7"), cpus("0"))
                                                 : FixtureCgroupFs::createV2(tmp.sub("fx"), cpus("0-7"), cpus("0")))
          .value();
  const auto backend = lc.version == CgroupVersion::kV1
                           ? makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}, {"memory", "memory"}})
                           : makeV2Backend();
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  layout.driver = lc.driver;
  layout.libvirt = lc.libvirt;
  layout.machinePartition = path(lc.partition);
  const LibvirtNamer namer(lc.libvirt, layout.machinePartition);
  const CgroupPath scope = *namer.scope(3, "web");

  // What libvirt creates before VRI sees the VM: the scope and its thread
  // groups, in every hierarchy VRI uses.
  std::vector<std::string> hierarchies = lc.version == CgroupVersion::kV1
                                             ? std::vector<std::string>{"cpuset", "cpu,cpuacct", "memory"}
                                             : std::vector<std::string>{""};
  const std::vector<CgroupPath> thread_groups = {namer.vcpu(scope, 0), namer.vcpu(scope, 1), namer.emulator(scope),
                                                 namer.iothread(scope, 1)};
  for (const std::string& h : hierarchies) {
    if (lc.version == CgroupVersion::kV2) {
      ASSERT_TRUE(fs.write({h, {}}, "cgroup.subtree_control", "+cpu +cpuset +memory").ok());
    }
    for (const CgroupPath& group : thread_groups) {
      CgroupPath at;
      for (const std::string& part : group.components()) {
        at = *at.child(part);
        if (fs.exists({h, at})) continue;
        ASSERT_TRUE(fs.mkdir({h, at}).ok()) << at.str();
        if (lc.version == CgroupVersion::kV1 && h == "cpuset") {
          ASSERT_TRUE(fs.write({h, at}, "cpuset.cpus", "0-7").ok());
          ASSERT_TRUE(fs.write({h, at}, "cpuset.mems", "0").ok());
        }
        if (lc.version == CgroupVersion::kV2 && at != group) {
          ASSERT_TRUE(fs.write({h, at}, "cgroup.subtree_control", "+cpu +cpuset").ok());
        }
        if (lc.version == CgroupVersion::kV2 && at == group) {
          ASSERT_TRUE(fs.write({h, at}, "cgroup.type", "threaded").ok());
        }
      }
    }
  }
  auto tree = buildDesiredTree(layout, node(), pods(), {vm(scope)});
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  CgroupApplier applier(fs, *backend);
  auto applied = applier.apply(*tree);
  ASSERT_TRUE(applied.ok()) << applied.error().message();
  auto left = applier.plan(*tree);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty()) << left->front().describe();
  const std::string cpuset = lc.version == CgroupVersion::kV1 ? "cpuset" : "";
  EXPECT_EQ(*fs.read({cpuset, namer.vcpu(scope, 0)}, "cpuset.cpus"), "6");
  EXPECT_EQ(*fs.read({cpuset, namer.emulator(scope)}, "cpuset.cpus"), "7");
  const auto kubelet = makeKubeletNamer(lc.driver);
  EXPECT_EQ(*fs.read({cpuset, *kubelet->container(QosClass::kGuaranteed, kGuaranteedUid, "app")}, "cpuset.cpus"),
            "4-5");
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, NodeTreeApplyTest,
    ::testing::Values(LayoutCase{"v1_cgroupfs_libvirt_plain", CgroupVersion::kV1, KubeletDriver::kCgroupfs,
                                 LibvirtLayout::kNoSystemd, "machine"},
                      LayoutCase{"v1_systemd_libvirt_systemd", CgroupVersion::kV1, KubeletDriver::kSystemd,
                                 LibvirtLayout::kSystemd, "machine.slice"},
                      LayoutCase{"v2_systemd_libvirt_level", CgroupVersion::kV2, KubeletDriver::kSystemd,
                                 LibvirtLayout::kSystemdWithLibvirtLevel, "machine.slice"},
                      LayoutCase{"v2_cgroupfs_nested_partition", CgroupVersion::kV2, KubeletDriver::kCgroupfs,
                                 LibvirtLayout::kSystemdWithLibvirtLevel, "system.slice/machine.slice"},
                      LayoutCase{"v2_cgroupfs_libvirt_plain", CgroupVersion::kV2, KubeletDriver::kCgroupfs,
                                 LibvirtLayout::kNoSystemd, "machine"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace vri
