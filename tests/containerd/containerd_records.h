// What the containerd tests read of the containerd under test: which one it is (containerd_under_test.h),
// its NRI socket, and a container's values as containerd records them in the container's OCI spec; and
// how a test leaves it: its pods removed, its cgroups gone.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/containerd/containerd_under_test.h"
#include "tests/support/eventually.h"
#include "tests/support/text_count.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri::testing {

using cri_client::CriClient;
using cri_client::PodQos;
namespace cri = ::runtime::v1;

inline const ContainerdUnderTest kUnderTest = containerdUnderTest();
inline const std::string kNriSocket = kUnderTest.nriSocket();

// Every pod a test made (its UIDs start with `uidPrefix`), stopped and removed through containerd directly.
inline void removePodsOf(const std::string& uidPrefix) {
  CriClient direct(kUnderTest.socket());
  cri::ListPodSandboxResponse sandboxes;
  if (!direct.listPodSandboxes(&sandboxes).ok()) return;
  for (const cri::PodSandbox& s : sandboxes.items()) {
    if (!s.metadata().uid().starts_with(uidPrefix)) continue;
    EXPECT_TRUE(direct.stopPodSandbox(s.id()).ok());
    EXPECT_TRUE(direct.removePodSandbox(s.id()).ok());
  }
}

// Processes containerd left running in a test's own cgroups: containerd 2.0 leaks the pause process
// (and its runc shim) of a sandbox whose RunPodSandbox an NRI plugin failed. Killed, or the test's
// cgroups could not be removed.
inline void killProcessesUnder(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  std::ifstream procs(dir + "/cgroup.procs");
  for (pid_t pid = 0; procs >> pid;) ::kill(pid, SIGKILL);
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory()) killProcessesUnder(entry.path());
  }
}

// The cgroups containerd leaves under a test's root, in every hierarchy, and what still runs in them.
inline void removeCgroupsUnder(const std::string& root) {
  const std::string pids = "/sys/fs/cgroup/pids/" + root;
  killProcessesUnder(std::filesystem::exists(pids) ? pids : "/sys/fs/cgroup/" + root);
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup")) {
    const std::string dir = hierarchy.path().string() + "/" + root;
    // A killed process leaves its cgroup once the kernel has reaped it.
    eventually(
        [&] {
          removeCgroupTree(dir);
          return !std::filesystem::exists(dir);
        },
        std::chrono::seconds(5));
  }
}

// A value of the container's OCI spec, linux.resources.cpu.<field>, from containerd's verbose status.
inline std::string specCpu(CriClient& cri, const std::string& id, const std::string& field) {
  return cri.specCpu(id, field);
}

}  // namespace vri::testing
