// A program in a pseudo-terminal, as a user at a terminal runs it: keys typed, the screen read
// until a text shows, the exit code.
#pragma once

#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "tests/vri/vrid_process.h"

namespace vri::testing {

class Terminal {
 public:
  Terminal(const std::vector<std::string>& argv, const std::string& home) {
    winsize size{};
    size.ws_row = 40;
    size.ws_col = 100;
    pid_ = ::forkpty(&fd_, nullptr, nullptr, &size);
    if (pid_ == 0) {
      ::setenv("TERM", "xterm", 1);
      ::setenv("HOME", home.c_str(), 1);
      ::unsetenv("XDG_STATE_HOME");
      ::unsetenv("COLUMNS");
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  void type(const std::string& keys) { ASSERT_EQ(::write(fd_, keys.data(), keys.size()), (ssize_t)keys.size()); }

  // Reads until `text` has appeared since the last call (10 s, scaled, at most).
  ::testing::AssertionResult shows(const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10 * timeScale());
    while (screen_.find(text, seen_) == std::string::npos) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ::testing::AssertionFailure() << "no " << text << " in:\n" << screen_.substr(seen_);
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) return ::testing::AssertionFailure() << "the terminal closed before " << text << ":\n" << screen_;
      screen_.append(buffer, static_cast<size_t>(n));
    }
    seen_ = screen_.find(text, seen_) + text.size();
    return ::testing::AssertionSuccess();
  }

  // -1: still running after `limit`.
  int exitCodeWithin(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    char buffer[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0 && ::read(fd_, buffer, sizeof buffer) <= 0) continue;  // keep the terminal drained
    }
    return -1;
  }

  // Everything read so far, and what came after the last text shows() found.
  const std::string& screen() const { return screen_; }
  std::string sinceLastShown() const { return screen_.substr(seen_); }

  int exitCode() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  int fd_ = -1;
  pid_t pid_ = -1;
  std::string screen_;
  size_t seen_ = 0;
};

}  // namespace vri::testing
