// Scanning trees laid out as containerd and libvirt really lay them out
// (../shared/recipes), on the fixture, in both cgroup versions; and drift.
#include "cgroup-model/node_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cgroup-model/drift.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/failing_cgroupfs.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

CgroupPath path(const std::string& text) { return *CgroupPath::parse(text); }
CpuSet cpus(const char* list) { return *CpuSet::parse(list); }

constexpr char kUid[] = "6f1c2b9e-1d2e-4c5a-9b7f-0a1b2c3d4e5f";
constexpr char kSandbox[] = "9a8b7c6d5e4f";
constexpr char kApp[] = "1a2b3c4d5e6f";
constexpr char kVmUuid[] = "c7a5fdbd-cdaf-9455-926a-d65c16db1809";

std::string qemuCmdline(const char* name) {
  const std::string args[] = {
      "/usr/bin/qemu-system-x86_64", "-name", std::string("guest=") + name, "-uuid", kVmUuid, "-smp", "2"};
  std::string out;
  for (const std::string& a : args) out += a + '\0';
  return out;
}

// Creates `p` (and missing parents) in `hierarchies`, v1 cpusets filled so tasks may join.
void makeTree(FixtureCgroupFs& fs, const std::vector<std::string>& hierarchies, const CgroupPath& p,
              bool threaded = false) {
  for (const std::string& h : hierarchies) {
    CgroupPath at;
    for (const std::string& part : p.components()) {
      const CgroupPath parent = at;
      at = *at.child(part);
      if (fs.exists({h, at})) continue;
      if (fs.version() == CgroupVersion::kV2) {
        ASSERT_TRUE(fs.write({h, parent}, "cgroup.subtree_control", "+cpu +cpuset").ok()) << parent.str();
      }
      ASSERT_TRUE(fs.mkdir({h, at}).ok()) << at.str();
      if (h == "cpuset") {  // as wide as the parent allows
        ASSERT_TRUE(fs.write({h, at}, "cpuset.cpus", *fs.read({h, parent}, "cpuset.cpus")).ok());
        ASSERT_TRUE(fs.write({h, at}, "cpuset.mems", "0").ok());
      }
    }
    if (threaded && fs.version() == CgroupVersion::kV2) {
      ASSERT_TRUE(fs.write({h, p}, "cgroup.type", "threaded").ok());
    }
  }
}

void join(FixtureCgroupFs& fs, const std::vector<std::string>& hierarchies, const CgroupPath& p, int task,
          const char* file = "cgroup.procs") {
  for (const std::string& h : hierarchies) ASSERT_TRUE(fs.write({h, p}, file, std::to_string(task)).ok()) << p.str();
}

TEST(NodeScanTest, V1CgroupfsDriverAndLibvirtWithoutSystemd) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  const std::vector<std::string> hs = {"cpuset", "cpu,cpuacct"};
  // containerd (cgroupfs driver): the sandbox and the app container of a Burstable pod.
  const CgroupPath pod = path(std::string("kubepods/burstable/pod") + kUid);
  makeTree(fs, hs, *pod.child(kSandbox));
  makeTree(fs, hs, *pod.child(kApp));
  join(fs, hs, *pod.child(kSandbox), 500);
  join(fs, hs, *pod.child(kApp), 501);
  ASSERT_TRUE(fs.write({"cpuset", *pod.child(kApp)}, "cpuset.cpus", "1-2").ok());
  makeTree(fs, hs, path("kubepods/besteffort/not-a-pod"));
  // libvirt without systemd, as the recipe lists it: machine/qemu-3-tiny.libvirt-qemu/{emulator,vcpu0,vcpu1}.
  const CgroupPath scope = path("machine/qemu-3-tiny.libvirt-qemu");
  for (const char* group : {"emulator", "vcpu0", "vcpu1"}) makeTree(fs, hs, *scope.child(group));
  join(fs, hs, *scope.child("emulator"), 8372);
  for (int tid : {8381, 8382}) join(fs, hs, *scope.child("emulator"), tid, "tasks");
  join(fs, hs, *scope.child("vcpu0"), 8383, "tasks");
  join(fs, hs, *scope.child("vcpu1"), 8384, "tasks");
  ASSERT_TRUE(fs.write({"cpuset", *scope.child("vcpu1")}, "cpuset.cpus", "3").ok());
  ASSERT_TRUE(fs.setProcFile("8372/cgroup",
                             "4:cpuset:/machine/qemu-3-tiny.libvirt-qemu/emulator\n"
                             "3:cpu,cpuacct:/machine/qemu-3-tiny.libvirt-qemu/emulator\n"
                             "2:memory:/supervisor\n0::/machine/qemu-3-tiny.libvirt-qemu/emulator\n")
                  .ok());
  ASSERT_TRUE(fs.setProcFile("8372/cmdline", qemuCmdline("tiny")).ok());

  const auto backend = makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}});
  auto scan = scanNode(fs, *backend, TreeLayout{});
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  ASSERT_EQ(scan->pods.size(), 1u);
  const ScannedPod& p = scan->pods[0];
  EXPECT_EQ(p.uid, kUid);
  EXPECT_EQ(p.qos, QosClass::kBurstable);
  ASSERT_EQ(p.containers.size(), 2u);
  EXPECT_EQ(p.containers[0].id, kApp);
  EXPECT_EQ(p.containers[0].cgroup.settings.cpus->format(), "1-2");
  EXPECT_EQ(p.containers[0].cgroup.settings.shares->value, 1024u);
  EXPECT_THAT(p.containers[0].cgroup.tasks, ElementsAre(501));
  EXPECT_EQ(p.containers[1].id, kSandbox);
  ASSERT_EQ(scan->vms.size(), 1u);
  const ScannedVm& vm = scan->vms[0];
  EXPECT_EQ(vm.scope.path, scope);
  EXPECT_EQ(vm.qemuPid, 8372);
  EXPECT_EQ(vm.uuid, kVmUuid);
  ASSERT_EQ(vm.threadGroups.size(), 3u);
  EXPECT_EQ(vm.threadGroups[0].kind, ScannedThreadGroup::Kind::kEmulator);
  EXPECT_THAT(vm.threadGroups[0].cgroup.tasks, ElementsAre(8372, 8381, 8382));
  EXPECT_EQ(vm.threadGroups[2].kind, ScannedThreadGroup::Kind::kVcpu);
  EXPECT_EQ(vm.threadGroups[2].index, 1);
  EXPECT_THAT(vm.threadGroups[2].cgroup.tasks, ElementsAre(8384));
  EXPECT_EQ(vm.threadGroups[2].cgroup.settings.cpus->format(), "3");
  EXPECT_THAT(scan->notes, ElementsAre("kubepods/besteffort/not-a-pod: not a pod"));
}

TEST(NodeScanTest, V2SystemdDriverAndLibvirtLevel) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV2(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  const std::vector<std::string> hs = {""};
  const CgroupPath pod = path("kubepods.slice/kubepods-pod6f1c2b9e_1d2e_4c5a_9b7f_0a1b2c3d4e5f.slice");
  makeTree(fs, hs, *pod.child(std::string("cri-containerd-") + kApp + ".scope"));
  join(fs, hs, *pod.child(std::string("cri-containerd-") + kApp + ".scope"), 700);
  const CgroupPath scope = path("machine.slice/machine-qemu\\x2d5\\x2dweb.scope");
  makeTree(fs, hs, *scope.child("libvirt"));
  // QEMU's process sits in the scope's libvirt level, its threads in the threaded groups.
  // iothread ids are libvirt's unsigned ints, up to 4294967295.
  for (const char* group : {"emulator", "vcpu0", "iothread4294967295"})
    makeTree(fs, hs, *scope.child("libvirt")->child(group), true);
  join(fs, hs, *scope.child("libvirt"), 9100);
  join(fs, hs, *scope.child("libvirt")->child("vcpu0"), 9105, "cgroup.threads");
  ASSERT_TRUE(fs.setProcFile("9100/cgroup", "0::/machine.slice/machine-qemu\\x2d5\\x2dweb.scope/libvirt\n").ok());
  ASSERT_TRUE(fs.setProcFile("9100/cmdline", qemuCmdline("web")).ok());
  // A scope whose process lives elsewhere is reported, not trusted.
  makeTree(fs, hs, path("machine.slice/machine-qemu\\x2d6\\x2dodd.scope/libvirt/emulator"), true);
  join(fs, hs, path("machine.slice/machine-qemu\\x2d6\\x2dodd.scope/libvirt"), 9200);
  ASSERT_TRUE(fs.setProcFile("9200/cgroup", "0::/system.slice/elsewhere.service\n").ok());

  TreeLayout layout;
  layout.driver = KubeletDriver::kSystemd;
  layout.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
  layout.machinePartition = path("machine.slice");
  auto scan = scanNode(fs, *makeV2Backend(), layout);
  ASSERT_TRUE(scan.ok()) << scan.error().message();
  ASSERT_EQ(scan->pods.size(), 1u);
  EXPECT_EQ(scan->pods[0].uid, kUid);
  EXPECT_EQ(scan->pods[0].qos, QosClass::kGuaranteed);
  ASSERT_EQ(scan->pods[0].containers.size(), 1u);
  EXPECT_EQ(scan->pods[0].containers[0].id, kApp);
  ASSERT_EQ(scan->vms.size(), 2u);
  EXPECT_EQ(scan->vms[0].qemuPid, 9100);
  EXPECT_EQ(scan->vms[0].uuid, kVmUuid);
  ASSERT_EQ(scan->vms[0].threadGroups.size(), 3u);
  EXPECT_EQ(scan->vms[0].threadGroups[1].kind, ScannedThreadGroup::Kind::kIothread);
  EXPECT_EQ(scan->vms[0].threadGroups[1].index, 4294967295);
  EXPECT_THAT(scan->vms[0].threadGroups[2].cgroup.tasks, ElementsAre(9105));
  EXPECT_THAT(scan->notes,
              UnorderedElementsAre(
                  "machine.slice/machine-qemu\\x2d6\\x2dodd.scope: process 9200 does not lead back to this scope",
                  "machine.slice/machine-qemu\\x2d6\\x2dodd.scope: process 9200 gives no -uuid"));
}

// The fixture, where listing `parent` removes `gone` (deepest first, in every hierarchy) right after
// the list is taken: a pod or a VM stopping while vrid starts.
class VanishingCgroupFs : public FixtureCgroupFs {
 public:
  VanishingCgroupFs(FixtureCgroupFs fs, CgroupPath parent, std::vector<CgroupPath> gone)
      : FixtureCgroupFs(std::move(fs)), parent_(std::move(parent)), gone_(std::move(gone)) {}
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override {
    auto names = FixtureCgroupFs::children(dir);
    if (dir.path == parent_) {
      for (const CgroupPath& path : gone_) {
        for (const FixtureHierarchy& h : hierarchies())
          (void)const_cast<VanishingCgroupFs*>(this)->rmdir({h.name, path});
      }
    }
    return names;
  }

 private:
  CgroupPath parent_;
  std::vector<CgroupPath> gone_;
};

TEST(NodeScanTest, ACgroupGoneBetweenItsListingAndItsReadingIsANoteNotAnError) {
  for (const char* parent : {"kubepods/burstable", "kubepods/burstable/pod6f1c2b9e-1d2e-4c5a-9b7f-0a1b2c3d4e5f",
                             "machine", "machine/qemu-3-tiny.libvirt-qemu"}) {
    testing::TempDir tmp;
    auto fixture = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
    const std::vector<std::string> hs = {"cpuset", "cpu,cpuacct"};
    const CgroupPath pod = path(std::string("kubepods/burstable/pod") + kUid);
    const CgroupPath scope = path("machine/qemu-3-tiny.libvirt-qemu");
    makeTree(fixture, hs, *pod.child(kApp));
    makeTree(fixture, hs, *scope.child("vcpu0"));
    // What goes with each listing: the pod or scope itself, or the container or vCPU group below it.
    const std::string listed = parent;
    std::vector<CgroupPath> gone;
    if (listed == "kubepods/burstable") gone = {*pod.child(kApp), pod};
    if (listed == pod.str()) gone = {*pod.child(kApp)};
    if (listed == "machine") gone = {*scope.child("vcpu0"), scope};
    if (listed == scope.str()) gone = {*scope.child("vcpu0")};
    VanishingCgroupFs fs(std::move(fixture), path(parent), gone);
    const auto backend = makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}});
    auto scan = scanNode(fs, *backend, TreeLayout{});
    ASSERT_TRUE(scan.ok()) << listed << ": " << scan.error().message();
    EXPECT_THAT(scan->notes, Contains(gone.back().str() + ": gone during the scan")) << listed;
  }
}

TEST(NodeScanTest, UuidOnlyFromAWellFormedArgument) {
  EXPECT_EQ(qemuUuidFromCmdline(qemuCmdline("x")), kVmUuid);
  EXPECT_EQ(qemuUuidFromCmdline(std::string("qemu\0-uuid\0../../etc\0", 22)), std::nullopt);
  EXPECT_EQ(qemuUuidFromCmdline(std::string("qemu\0-uuid", 10)), std::nullopt);
}

TEST(DriftTest, ReportsHandWrittenValuesVanishedAndUnknownCgroups) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  const auto backend = makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}});
  NodeResources node{cpus("0-1"), cpus("0"), 4000, 0, {}, {}, {}};
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  const std::vector<PodCgroup> pods = {{kUid,
                                        QosClass::kBurstable,
                                        {{"app", 500, 0, std::nullopt, std::nullopt, std::nullopt},
                                         {"side", 0, 0, std::nullopt, std::nullopt, std::nullopt}},
                                        0,
                                        0,
                                        {}}};
  makeTree(fs, {"cpuset", "cpu,cpuacct"}, path("machine"));
  auto tree = buildDesiredTree(layout, node, pods, {});
  ASSERT_TRUE(tree.ok());
  CgroupApplier applier(fs, *backend);
  ASSERT_TRUE(applier.apply(*tree).ok());
  ASSERT_TRUE(detectDrift(fs, *backend, *tree)->empty());

  const CgroupPath pod = path(std::string("kubepods/burstable/pod") + kUid);
  ASSERT_TRUE(fs.write({"cpuset", *pod.child("app")}, "cpuset.cpus", "0").ok());                        // by hand
  for (const char* h : {"cpuset", "cpu,cpuacct"}) ASSERT_TRUE(fs.rmdir({h, *pod.child("side")}).ok());  // vanished
  makeTree(fs, {"cpuset"}, path("machine/qemu-9-stray.libvirt-qemu/vcpu0"));                            // appeared
  auto drift = detectDrift(fs, *backend, *tree);
  ASSERT_TRUE(drift.ok()) << drift.error().message();
  std::vector<std::string> described;
  for (const Drift& d : *drift) described.push_back(d.describe());
  EXPECT_THAT(described,
              UnorderedElementsAre(
                  "cpuset:kubepods/burstable/pod" + std::string(kUid) + "/app cpuset.cpus is \"0\", VRI wants \"0-1\"",
                  "cpuset:kubepods/burstable/pod" + std::string(kUid) + "/side is gone; VRI expects it",
                  "cpuset:machine/qemu-9-stray.libvirt-qemu is not known to VRI"));
}

// A cgroupfs whose listing of one directory fails with `error` (the narrow seam: the rest is the fixture's).
class UnlistableCgroupFs : public testing::FailingCgroupFs {
 public:
  UnlistableCgroupFs(CgroupFs& inner, CgroupPath unlistable, int error)
      : FailingCgroupFs(inner), unlistable_(std::move(unlistable)), error_(error) {}
  Result<std::vector<std::string>> children(const CgroupDir& dir) const override {
    if (dir.path == unlistable_) return Error::fromErrno(error_, "list " + dir.describe());
    return FailingCgroupFs::children(dir);
  }

 private:
  CgroupPath unlistable_;
  int error_;
};

// A directory that cannot be listed leaves the drift incomplete: an error, not a report without it.
// One that vanished while it was read holds nothing unknown.
TEST(DriftTest, AnUnlistableDirectoryIsAnErrorAndAVanishedOneIsNot) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  const auto backend = makeV1Backend({{"cpuset", "cpuset"}, {"cpu", "cpu,cpuacct"}});
  NodeResources node{cpus("0-1"), cpus("0"), 4000, 0, {}, {}, {}};
  TreeLayout layout;
  layout.ownership = Ownership::kEverything;
  makeTree(fs, {"cpuset", "cpu,cpuacct"}, path("machine"));
  auto tree = buildDesiredTree(layout, node, {}, {});
  ASSERT_TRUE(tree.ok());
  CgroupApplier applier(fs, *backend);
  ASSERT_TRUE(applier.apply(*tree).ok());

  UnlistableCgroupFs denied(fs, path("machine"), EACCES);
  auto drift = detectDrift(denied, *backend, *tree);
  ASSERT_FALSE(drift.ok());
  EXPECT_THAT(drift.error().message(), HasSubstr("machine"));

  UnlistableCgroupFs vanished(fs, path("machine"), ENOENT);
  drift = detectDrift(vanished, *backend, *tree);
  ASSERT_TRUE(drift.ok()) << drift.error().message();
  EXPECT_TRUE(drift->empty());
}

}  // namespace
}  // namespace vri
