// The fixture of the guest suites that run a whole vrid on the real v2 hierarchy: a subtree `t` of
// the delegated scope with the controllers vrid uses, libvirt's machine partition in it (libvirt makes
// it at start; vrid adopts it, never creates it), and, after each test, vrid stopped, the test's
// children killed and the subtree removed.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "proto/vri.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/v2guest/delegated_scope.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {

class VridSubtreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "needs root";
    root_ = "/sys/fs/cgroup/" + delegatedScope().str() + "/t";
    ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0) << root_;
    std::ofstream(root_ + "/cgroup.subtree_control") << "+cpuset +cpu +memory +pids +hugetlb";
    ASSERT_THAT(readFile(root_ + "/cgroup.subtree_control"), ::testing::HasSubstr("cpuset"));
    ASSERT_EQ(::mkdir((root_ + "/machine").c_str(), 0755), 0);
  }
  void TearDown() override {
    stub_.reset();
    if (vrid_) vrid_->stop();
    for (int pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    EXPECT_TRUE(eventually([&] {
      removeCgroupTree(root_);
      return !std::filesystem::exists(root_);
    })) << "left behind: "
        << root_;
  }
  // The subtree as vrid's flags name it: "/<scope>/t".
  std::string relativeRoot() const { return root_.substr(std::string("/sys/fs/cgroup").size()); }

  TempDir tmp_;
  std::string root_;
  std::unique_ptr<VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> stub_;
  std::vector<int> children_;
};

}  // namespace vri::testing
