// Runs the real vrid binary as a child process for the tests that need a
// process: signals, exit codes, socket files, other users.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"

namespace vri::testing {

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts `argv` with stderr (and stdout too, when `bothStreams`) going to `logPath`.
// `s` without the newlines and spaces a cgroup or proc file ends with.
inline std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Removes `dir` and the directories below it, deepest first (cgroups refuse rmdir with children).
inline void removeCgroupTree(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_directory()) removeCgroupTree(entry.path());
  }
  ::rmdir(dir.c_str());
}

// How much slower than here the test runs (VRI_TEST_TIME_SCALE; the v2 guest's
// emulation sets 10): deadlines are multiplied by it, assertions never.
inline int timeScale() {
  const char* scale = std::getenv("VRI_TEST_TIME_SCALE");
  return scale != nullptr && std::atoi(scale) > 0 ? std::atoi(scale) : 1;
}

inline pid_t spawn(const std::vector<std::string>& argv, const std::string& logPath, int openFlags, bool bothStreams) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | openFlags, 0644);
    if (bothStreams) ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Runs `argv` to completion with stdout and stderr captured; returns the exit code.
inline int runCommand(const std::vector<std::string>& argv, std::string* output, const std::string& scratch) {
  const pid_t pid = spawn(argv, scratch, O_TRUNC, true);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (output) *output = readFile(scratch);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class VridProcess {
 public:
  // Flags that keep vrid off every real cgroup: kubepods and the machine
  // partition are looked for in a subtree that does not exist, so the
  // (adopted) roots are missing and nothing is written.
  explicit VridProcess(const TempDir& tmp, std::string name = "vrid", std::vector<std::string> extra = {})
      : tmp_(tmp), name_(std::move(name)) {
    args_ = {VRID_BINARY,
             "--config=" + tmp.sub("vrid.conf"),
             "--topology=synthetic:pack:1 numa:2(memory=8GiB) core:2 pu:2",
             "--state-dir=" + tmp.sub("state"),
             "--socket=" + tmp.sub("run/vri.sock"),
             "--admin-socket=" + tmp.sub("run/admin.sock"),
             "--kubelet-cgroup-root=/vri-absent-" + std::to_string(::getpid()),
             "--machine-partition=vri-absent-" + std::to_string(::getpid()) + "/machine",
             "--libvirt-layout=no-systemd",
             "--libvirt-uri=",
             "--vm-memory-overhead=0"};
    for (std::string& e : extra) {
      // A topology of the caller's own takes the synthetic one's place (vrid takes the last flag, but
      // one vrid with two topologies in its command line misleads whoever reads `ps`).
      const auto isTopology = [](const std::string& a) { return a.starts_with("--topology="); };
      if (isTopology(e))
        *std::find_if(args_.begin(), args_.end(), isTopology) = std::move(e);
      else
        args_.push_back(std::move(e));
    }
    if (::access(tmp.sub("vrid.conf").c_str(), F_OK) != 0) std::ofstream(tmp.sub("vrid.conf")) << "# empty\n";
  }
  ~VridProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string socket() const { return tmp_.sub("run/vri.sock"); }
  std::string adminSocket() const { return tmp_.sub("run/admin.sock"); }
  std::string log() const { return readFile(tmp_.sub(name_ + ".log")); }
  pid_t pid() const { return pid_; }

  // Starts vrid and waits until it says it is ready.
  ::testing::AssertionResult start() {
    const size_t logged_before = log().size();  // a restart appends to the same log
    pid_ = spawn(args_, tmp_.sub(name_ + ".log"), O_APPEND, false);
    for (int i = 0; i < 200 * timeScale(); ++i) {
      if (log().find(" ready\n", logged_before) != std::string::npos) return ::testing::AssertionSuccess();
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return ::testing::AssertionFailure() << "vrid exited at start-up: " << log();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return ::testing::AssertionFailure() << "vrid not ready after " << 10 * timeScale() << " s: " << log();
  }

  // Sends `signal` and returns the exit code (or 128 + the signal).
  int stop(int signal = SIGTERM) {
    if (pid_ <= 0) return -1;  // never started, or already stopped (kill(-1) would signal everything)
    ::kill(pid_, signal);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  const TempDir& tmp_;
  std::string name_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
};

}  // namespace vri::testing
