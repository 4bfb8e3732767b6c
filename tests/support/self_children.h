// Children that are this test binary run again with a mode flag: a sleeper, a
// spinner, and probes that wait to be placed (SIGUSR1) and then do what a limit
// must stop. Tests spawn them, move them into cgroups and read their status;
// main() calls runChildMode first.
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/eventually.h"

namespace vri::testing {

// A field of /proc/<pid>/status ("Cpus_allowed_list", "State").
inline std::string statusField(int pid, const std::string& field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with(field + ":")) {
      const size_t value = line.find_first_not_of(" \t", field.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "";
}

// Starts this binary as `argv0` with `args`, the first of them a mode:
// "--vri-sleeper", "--vri-busy", "--vri-hold-memory <MiB>", "--vri-fork-probe", "--vri-hugepage-probe <pages>",
// "--vri-memory-probe <MiB>".
inline pid_t spawnSelf(const std::string& argv0, const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>(argv0.c_str())};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  return pid;
}

// As spawnSelf, looking like QEMU for `uuid` to vrid's scanner (argv[0] and
// -uuid); returns once the exec shows in /proc/<pid>/cmdline.
inline pid_t spawnAsQemu(const std::string& uuid, std::vector<std::string> args) {
  args.insert(args.end(), {"-uuid", uuid});
  const pid_t pid = spawnSelf("qemu-system-x86_64", args);
  const bool execed = eventually([&] {
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    return argv0 == "qemu-system-x86_64";
  });
  EXPECT_TRUE(execed) << "child " << pid << " did not exec";
  return pid;
}

// True once a probe sits in sigwait() for SIGUSR1, so the signal cannot kill it.
// (SigBlk reads 0 meanwhile: the kernel unblocks what sigtimedwait waits for.)
inline bool waitsForUsr1(int pid) {
  return eventually([&] {
    std::ifstream wchan("/proc/" + std::to_string(pid) + "/wchan");
    std::string where;
    wchan >> where;
    return where.find("sigtimedwait") != std::string::npos;
  });
}

// Runs the child's mode, if argv names one; returns otherwise.
inline void runChildMode(int argc, char** argv) {
  if (argc < 2) return;
  const std::string mode = argv[1];
  if (mode == "--vri-sleeper") {
    while (true) ::pause();
  }
  if (mode == "--vri-busy") {
    volatile unsigned long spin = 0;
    while (true) spin = spin + 1;
  }
  if (mode == "--vri-hold-memory") {  // touches N MiB and keeps it until killed
    const size_t bytes = static_cast<size_t>(argc > 2 ? std::atoi(argv[2]) : 1) << 20;
    auto* memory = static_cast<char*>(std::malloc(bytes));
    if (memory == nullptr) ::_exit(3);
    std::memset(memory, 1, bytes);
    while (true) ::pause();
  }
  if (mode != "--vri-fork-probe" && mode != "--vri-hugepage-probe" && mode != "--vri-memory-probe") return;
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, nullptr);
  int received = 0;
  sigwait(&usr1, &received);
  if (mode == "--vri-fork-probe") {  // exits 42 when the fork is refused for pids.max
    const pid_t child = ::fork();
    if (child < 0) ::_exit(errno == EAGAIN ? 42 : 1);
    if (child == 0) ::_exit(0);
    ::waitpid(child, nullptr, 0);
    ::_exit(0);
  }
  if (mode == "--vri-memory-probe") {  // touches N MiB: past memory.max the OOM killer ends it
    const size_t bytes = static_cast<size_t>(argc > 2 ? std::atoi(argv[2]) : 1) << 20;
    auto* memory = static_cast<char*>(std::malloc(bytes));
    if (memory == nullptr) ::_exit(3);
    std::memset(memory, 1, bytes);
    ::_exit(0);
  }
  // Faults in N pages of 2 MiB: past hugetlb.2MB.max the kernel answers SIGBUS.
  const size_t bytes = static_cast<size_t>(argc > 2 ? std::atoi(argv[2]) : 1) * (2UL << 20);
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
  if (memory == MAP_FAILED) ::_exit(3);
  std::memset(memory, 1, bytes);
  ::_exit(0);
}

}  // namespace vri::testing
