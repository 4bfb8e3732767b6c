// A private subtree of the real cgroup v1 hierarchies, made by a root test and removed however
// it ends: /sys/fs/cgroup/<hierarchy>/vri-test-<pid>-<name> in cpuset, cpu, cpuacct and pids (a
// co-mounted "cpu" is a link to "cpu,cpuacct"), with every online CPU and memory node. Never in
// the memory hierarchy, whose cgroup of this process belongs to the host's supervisor.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/cpuset.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {

class RealV1Subtree {
 public:
  explicit RealV1Subtree(const std::string& name) : root_("vri-test-" + std::to_string(::getpid()) + "-" + name) {}
  ~RealV1Subtree() { remove(); }
  RealV1Subtree(const RealV1Subtree&) = delete;
  RealV1Subtree& operator=(const RealV1Subtree&) = delete;

  // Makes the subtree; fails the test, naming what is missing, when the host lacks a hierarchy.
  void make() {
    ASSERT_EQ(::geteuid(), 0u) << "the root tests need root (run ctest as root; CI does)";
    const std::string online = readFile("/sys/fs/cgroup/cpuset/cpuset.effective_cpus");
    ASSERT_FALSE(online.empty()) << "needs the v1 cpuset hierarchy at /sys/fs/cgroup/cpuset";
    cpus_ = *CpuSet::parse(trimmed(online));
    ASSERT_GE(cpus_.count(), 2) << "needs 2 CPUs";
    for (const char* controller : {"cpuset", "cpu", "cpuacct", "pids"}) {
      std::error_code ec;
      const auto dir = std::filesystem::canonical(std::string("/sys/fs/cgroup/") + controller, ec);
      ASSERT_FALSE(ec) << "needs the v1 " << controller << " hierarchy at /sys/fs/cgroup/" << controller;
      const std::string hierarchy = dir.filename();
      if (std::find(hierarchies_.begin(), hierarchies_.end(), hierarchy) == hierarchies_.end())
        hierarchies_.push_back(hierarchy);
    }
    for (const std::string& h : hierarchies_) ASSERT_EQ(::mkdir(dir(h).c_str(), 0755), 0) << dir(h);
    std::ofstream(dir("cpuset") + "/cpuset.cpus") << cpus_.format();
    std::ofstream(dir("cpuset") + "/cpuset.mems") << trimmed(readFile("/sys/fs/cgroup/cpuset/cpuset.effective_mems"));
  }
  void remove() {
    for (const std::string& h : hierarchies_) removeCgroupTree(dir(h));
  }

  const std::string& root() const { return root_; }
  const CpuSet& cpus() const { return cpus_; }
  const std::vector<std::string>& hierarchies() const { return hierarchies_; }
  // The subtree's directory in a hierarchy ("cpuset", or "cpu" through its link).
  std::string dir(const std::string& hierarchy) const { return "/sys/fs/cgroup/" + hierarchy + "/" + root_; }

 private:
  std::string root_;
  CpuSet cpus_;
  std::vector<std::string> hierarchies_;
};

}  // namespace vri::testing
