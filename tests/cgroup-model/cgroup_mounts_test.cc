#include "cgroup-model/cgroup_mounts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

// A hybrid host: v1 hierarchies (cpu and cpuacct co-mounted) and an empty cgroup2.
constexpr char kHybrid[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset,clone_children\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:5 - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n";

constexpr char kUnified[] =
    "25 30 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
    "30 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n";

TEST(CgroupMountsTest, ReadsV1HierarchiesAndCoMountedControllers) {
  auto mounts = parseMountInfo(kHybrid);
  ASSERT_TRUE(mounts.ok()) << mounts.error().message();
  EXPECT_EQ(mounts->v1.at("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts->v1.at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts->v1.at("cpuset"), "/sys/fs/cgroup/cpuset");
  EXPECT_EQ(mounts->v1.at("name=systemd"), "/sys/fs/cgroup/systemd");
  EXPECT_FALSE(mounts->v1.count("clone_children"));
  EXPECT_EQ(mounts->unified, "/sys/fs/cgroup/unified");
  EXPECT_TRUE(mounts->hybrid());
  EXPECT_EQ(*v1Hierarchy(*mounts, "cpu", "/sys/fs/cgroup/"), "cpu,cpuacct");
  EXPECT_EQ(v1Hierarchy(*mounts, "hugetlb", "/sys/fs/cgroup").error().code(), ErrorCode::kNotFound);
  // The unified hierarchy offers nothing here: v1 is the one to drive.
  EXPECT_EQ(*chooseCgroupVersion(*mounts, "", std::nullopt), CgroupVersion::kV1);
  EXPECT_THAT(chooseCgroupVersion(*mounts, "", CgroupVersion::kV2).error().message(),
              HasSubstr("offers no cpu and cpuset controllers"));
}

TEST(CgroupMountsTest, ReadsAUnifiedHost) {
  auto mounts = parseMountInfo(kUnified);
  ASSERT_TRUE(mounts.ok());
  EXPECT_TRUE(mounts->v1.empty());
  EXPECT_EQ(mounts->unified, "/sys/fs/cgroup");
  EXPECT_EQ(*chooseCgroupVersion(*mounts, "cpuset cpu io memory hugetlb pids rdma", std::nullopt), CgroupVersion::kV2);
  EXPECT_THAT(chooseCgroupVersion(*mounts, "cpuset cpu", CgroupVersion::kV1).error().message(),
              HasSubstr("no v1 hierarchy"));
}

TEST(CgroupMountsTest, UnescapesMountPointsAndRefusesMalformedLines) {
  auto mounts = parseMountInfo("1 2 0:1 / /mnt/with\\040space rw - cgroup cgroup rw,cpuset\n");
  ASSERT_TRUE(mounts.ok());
  EXPECT_EQ(mounts->v1.at("cpuset"), "/mnt/with space");
  EXPECT_THAT(parseMountInfo("1 2 0:1 / /x rw cgroup cgroup rw,cpuset\n").error().message(), HasSubstr("malformed"));
  // Found by fuzz/proc_fuzz: a cgroup line that ends after its source had its super options read past the end.
  EXPECT_THAT(parseMountInfo("1 2 0:1 / /x rw - cgroup cgroup\n").error().message(), HasSubstr("malformed"));
  // Found by fuzz/proc_fuzz (fuzz/regressions/proc_fuzz/): a mount point that is not an absolute path would be
  // taken relative to vrid's working directory.
  for (const char* line :
       {"1 2 0:1 / sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "1 2 0:1 / cpuset rw - cgroup cgroup rw,cpuset\n",
        "1 2 0:1 / /a\\000b rw - cgroup2 x rw\n"}) {
    const auto refused = parseMountInfo(line);
    ASSERT_FALSE(refused.ok()) << line;
    EXPECT_THAT(refused.error().message(), HasSubstr("is not an absolute path")) << line;
  }
  EXPECT_EQ(*parseCgroupVersion("v2"), CgroupVersion::kV2);
  EXPECT_FALSE(parseCgroupVersion("2").ok());
}

}  // namespace
}  // namespace vri
