// The guest suites run in a scope of their own with Delegate=yes. v2 allows no
// processes in a cgroup that delegates controllers, so a test moves itself into
// <scope>/runner once and then delegates from the scope.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cgroup-model/kernel_cgroupfs.h"

namespace vri::testing {

inline constexpr char kDelegatedControllers[] = "+cpuset +cpu +memory +pids +hugetlb";

// The delegated scope this process was started in ("0::/vri.slice/vri-kernel.scope").
inline CgroupPath delegatedScope() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::getline(in, line);
  EXPECT_TRUE(line.starts_with("0::/")) << "not on cgroup v2: " << line;
  std::string path = line.substr(4);
  if (path.ends_with("/runner")) path.resize(path.size() - 7);
  return *CgroupPath::parse(path);
}

// v2 allows no processes in a cgroup that delegates controllers: the test moves
// itself into <scope>/runner once, then delegates from the scope.
class DelegatedScope : public ::testing::Environment {
 public:
  void SetUp() override {
    auto fs = KernelCgroupFs::create("/sys/fs/cgroup");
    ASSERT_TRUE(fs.ok()) << fs.error().message();
    const CgroupPath scope = delegatedScope();
    const CgroupDir runner{"", *scope.child("runner")};
    if (!fs->exists(runner)) {
      ASSERT_TRUE(fs->mkdir(runner).ok());
    }
    auto moved = fs->write(runner, "cgroup.procs", std::to_string(::getpid()));
    ASSERT_TRUE(moved.ok()) << moved.error().message();
    auto delegated = fs->write({"", scope}, "cgroup.subtree_control", kDelegatedControllers);
    ASSERT_TRUE(delegated.ok()) << delegated.error().message();
  }
};

}  // namespace vri::testing
