// The fixture refuses what the kernel refuses, with the kernel's errno.
#include "cgroup-model/fixture_cgroupfs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

CgroupDir at(const char* hierarchy, const char* path) { return {hierarchy, *CgroupPath::parse(path)}; }
CpuSet cpus(const char* list) { return *CpuSet::parse(list); }

TEST(FixtureCgroupFsTest, V1CpusetRules) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  EXPECT_EQ(*fs.read(at("cpuset", ""), "cpuset.cpus"), "0-3");
  ASSERT_TRUE(fs.mkdir(at("cpuset", "a")).ok());
  ASSERT_TRUE(fs.mkdir(at("cpuset", "a/b")).ok());
  EXPECT_EQ(fs.mkdir(at("cpuset", "a")).error().sysErrno(), EEXIST);
  EXPECT_EQ(fs.mkdir(at("cpuset", "x/y")).error().sysErrno(), ENOENT);
  // A new cpuset is empty; tasks cannot join it yet.
  EXPECT_EQ(fs.write(at("cpuset", "a"), "cgroup.procs", "4242").error().sysErrno(), ENOSPC);
  // Child outside its parent: EACCES, as the v1 kernel answers; widen the parent first.
  EXPECT_EQ(fs.write(at("cpuset", "a/b"), "cpuset.cpus", "1").error().sysErrno(), EACCES);
  ASSERT_TRUE(fs.write(at("cpuset", "a"), "cpuset.cpus", "0-2").ok());
  ASSERT_TRUE(fs.write(at("cpuset", "a/b"), "cpuset.cpus", "1-2").ok());
  // Narrowing a parent below a child: EBUSY.
  EXPECT_EQ(fs.write(at("cpuset", "a"), "cpuset.cpus", "0-1").error().sysErrno(), EBUSY);
  EXPECT_EQ(fs.write(at("cpuset", "a"), "cpuset.cpus", "3-1").error().sysErrno(), EINVAL);
  EXPECT_EQ(fs.write(at("cpuset", "a"), "cpuset.cpus", "0-7").error().sysErrno(), EINVAL);
  ASSERT_TRUE(fs.write(at("cpuset", "a"), "cpuset.mems", "0").ok());
  ASSERT_TRUE(fs.write(at("cpuset", "a"), "cgroup.procs", "4242").ok());
  EXPECT_EQ(*fs.read(at("cpuset", "a"), "tasks"), "4242");
  // Busy cgroups stay.
  EXPECT_EQ(fs.rmdir(at("cpuset", "a")).error().sysErrno(), EBUSY);
  ASSERT_TRUE(fs.rmdir(at("cpuset", "a/b")).ok());
  EXPECT_EQ(fs.rmdir(at("cpuset", "a")).error().sysErrno(), EBUSY);      // task 4242 is still there
  ASSERT_TRUE(fs.write(at("cpuset", ""), "cgroup.procs", "4242").ok());  // moving it out empties a
  EXPECT_EQ(*fs.read(at("cpuset", "a"), "tasks"), "");
  ASSERT_TRUE(fs.rmdir(at("cpuset", "a")).ok());
}

TEST(FixtureCgroupFsTest, V1ValueRules) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  ASSERT_TRUE(fs.mkdir(at("cpu,cpuacct", "a")).ok());
  ASSERT_TRUE(fs.write(at("cpu,cpuacct", "a"), "cpu.shares", "1").ok());
  EXPECT_EQ(*fs.read(at("cpu,cpuacct", "a"), "cpu.shares"), "2");  // the kernel clamps
  EXPECT_EQ(fs.write(at("cpu,cpuacct", "a"), "cpu.shares", "many").error().sysErrno(), EINVAL);
  EXPECT_EQ(fs.write(at("cpu,cpuacct", "a"), "cpu.cfs_quota_us", "10").error().sysErrno(), EINVAL);
  EXPECT_EQ(fs.write(at("cpu,cpuacct", "a"), "cpu.no_such_file", "1").error().sysErrno(), ENOENT);
  ASSERT_TRUE(fs.mkdir(at("memory", "a")).ok());
  ASSERT_TRUE(fs.write(at("memory", "a"), "memory.limit_in_bytes", "1000000").ok());
  EXPECT_EQ(*fs.read(at("memory", "a"), "memory.limit_in_bytes"), "999424");  // whole pages
}

TEST(FixtureCgroupFsTest, V2DelegationAndProcessRules) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV2(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  ASSERT_TRUE(fs.mkdir(at("", "a")).ok());
  // Nothing delegated yet: no cpu files in a.
  EXPECT_EQ(fs.write(at("", "a"), "cpu.weight", "50").error().sysErrno(), ENOENT);
  EXPECT_EQ(fs.write(at("", ""), "cgroup.subtree_control", "+gpu").error().sysErrno(), ENOENT);
  ASSERT_TRUE(fs.write(at("", ""), "cgroup.subtree_control", "+cpu +cpuset").ok());
  ASSERT_TRUE(fs.write(at("", "a"), "cpu.weight", "50").ok());
  EXPECT_EQ(fs.write(at("", "a"), "cpu.weight", "0").error().sysErrno(), ERANGE);
  EXPECT_EQ(fs.write(at("", "a"), "memory.max", "1G").error().sysErrno(), ENOENT);  // memory not delegated
  ASSERT_TRUE(fs.write(at("", "a"), "cpu.max", "50000").ok());
  EXPECT_EQ(*fs.read(at("", "a"), "cpu.max"), "50000 100000");
  // A process in a: a may delegate threaded controllers beside it (it becomes a thread
  // root), not domain ones (no internal processes), as the v2 kernel answers.
  ASSERT_TRUE(fs.write(at("", ""), "cgroup.subtree_control", "+memory").ok());
  ASSERT_TRUE(fs.write(at("", "a"), "cgroup.procs", "77").ok());
  EXPECT_EQ(fs.write(at("", "a"), "cgroup.subtree_control", "+memory").error().sysErrno(), EBUSY);
  ASSERT_TRUE(fs.write(at("", "a"), "cgroup.subtree_control", "+cpu").ok());
  ASSERT_TRUE(fs.mkdir(at("", "a/d")).ok());
  EXPECT_EQ(fs.write(at("", "a/d"), "cgroup.procs", "77").error().sysErrno(), EOPNOTSUPP);  // below a thread root
  ASSERT_TRUE(fs.rmdir(at("", "a/d")).ok());
  ASSERT_TRUE(fs.write(at("", ""), "cgroup.procs", "77").ok());
  ASSERT_TRUE(fs.write(at("", "a"), "cgroup.subtree_control", "+memory").ok());
  ASSERT_TRUE(fs.mkdir(at("", "a/t")).ok());
  // ... and a process cannot join a cgroup that delegates a domain controller,
  EXPECT_EQ(fs.write(at("", "a"), "cgroup.procs", "77").error().sysErrno(), EBUSY);
  // which cannot hold a threaded subtree either.
  EXPECT_EQ(fs.write(at("", "a/t"), "cgroup.type", "threaded").error().sysErrno(), EOPNOTSUPP);
  ASSERT_TRUE(fs.write(at("", "a"), "cgroup.subtree_control", "-memory").ok());
  // Thread groups: threaded type only, no processes.
  EXPECT_EQ(fs.write(at("", "a/t"), "cgroup.type", "domain").error().sysErrno(), EINVAL);
  ASSERT_TRUE(fs.write(at("", "a/t"), "cgroup.type", "threaded").ok());
  EXPECT_EQ(*fs.read(at("", "a"), "cgroup.type"), "domain threaded");
  EXPECT_EQ(fs.write(at("", "a"), "cgroup.subtree_control", "+memory").error().sysErrno(), EOPNOTSUPP);
  EXPECT_EQ(fs.write(at("", "a/t"), "cgroup.procs", "77").error().sysErrno(), EOPNOTSUPP);
}

TEST(FixtureCgroupFsTest, ProcFilesAndMountInfo) {
  testing::TempDir tmp;
  auto fs = std::move(FixtureCgroupFs::createV1(tmp.sub("fx"), cpus("0-3"), cpus("0"))).value();
  auto mounts = readCgroupMounts(fs);
  ASSERT_TRUE(mounts.ok()) << mounts.error().message();
  EXPECT_EQ(mounts->v1.at("cpuacct"), tmp.sub("fx") + "/cgroup/cpu,cpuacct");
  ASSERT_TRUE(fs.setProcFile("42/cgroup", "4:cpuset:/machine/x\n").ok());
  EXPECT_EQ(*fs.readProc("42/cgroup"), "4:cpuset:/machine/x");
  EXPECT_FALSE(fs.readProc("../etc/passwd").ok());
}

}  // namespace
}  // namespace vri
