// vrictl's shell as a user meets it, through a pseudo-terminal: the prompt, TAB
// completing commands and a VM's name from vrid, a list of choices when TAB is
// ambiguous, Ctrl-C ending `events --follow` but not the shell, and the history
// kept for the next session. And the same shell reading commands from a pipe.
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "tests/vri/vrid_api_fixture.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

// vrictl in a pseudo-terminal, as a user at a terminal runs it.
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

class VrictlShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(vrid_.start());
    grpc::ClientContext context;
    v1::VmAllocation placed;
    ASSERT_TRUE(vrid_.admin->AdmitVm(&context, vm(kVmUuid, "database", 1, v1::DEDICATED), &placed).ok());
  }
  void admitPod(const std::string& uid) {
    grpc::ClientContext context;
    v1::ContainerAllocation placed;
    ASSERT_TRUE(vrid_.admin->AdmitContainer(&context, container(uid, v1::BURSTABLE, 100, 0), &placed).ok());
  }
  DaemonHarness vrid_;
};

TEST_F(VrictlShellTest, CompletesCommandsAndNamesFollowsEventsUntilCtrlCAndKeepsItsHistory) {
  const std::string home = vrid_.tmp().sub("home");
  {
    Terminal terminal({VRICTL_BINARY, "--socket=" + vrid_.config.socket}, home);
    ASSERT_TRUE(terminal.shows("vrictl # "));
    // What TAB inserts is redrawn with cursor moves: the command that runs shows what the line held.
    terminal.type("li\t--v\t\r");  // "list --vms"
    ASSERT_TRUE(terminal.shows("Kind Id"));
    ASSERT_TRUE(terminal.shows("database"));
    ASSERT_TRUE(terminal.shows("vrictl # "));

    terminal.type("dominfo da\t\r");  // the VM's name, from vrid
    ASSERT_TRUE(terminal.shows("UUID:"));
    ASSERT_TRUE(terminal.shows(kVmUuid));
    ASSERT_TRUE(terminal.shows("vrictl # "));

    terminal.type("po\t");
    ASSERT_TRUE(terminal.shows("podinfo  pool"));  // ambiguous: the choices
    terminal.type("ol\r");
    ASSERT_TRUE(terminal.shows("Shared:"));
    ASSERT_TRUE(terminal.shows("vrictl # "));

    terminal.type("help map\r");
    ASSERT_TRUE(terminal.shows("Usage: map [OPTIONS]"));
    terminal.type("dominfo nosuch\r");
    ASSERT_TRUE(terminal.shows("vrictl: vm: no VM with UUID or name nosuch"));
    ASSERT_TRUE(terminal.shows("vrictl # "));  // a refusal ends the command, not the shell

    terminal.type("events --follow --recent 0\r");
    admitPod(kUid);
    ASSERT_TRUE(terminal.shows("ADMITTED"));
    terminal.type("\x03");  // Ctrl-C
    ASSERT_TRUE(terminal.shows("vrictl # "));
    terminal.type("quit\r");
    EXPECT_EQ(terminal.exitCode(), 0);
  }
  const std::string history = readFile(home + "/.local/state/vrictl/history");
  // libedit's format (blanks as \040): the lines as TAB completed them, each word with its space.
  EXPECT_THAT(history, HasSubstr("\nlist\\040--vms\\040\n"));
  EXPECT_THAT(history, HasSubstr("\ndominfo\\040database\\040\n"));
  EXPECT_THAT(history, HasSubstr("\nevents\\040--follow\\040--recent\\0400\n"));

  // The next session starts with it: Ctrl-P brings back the last line, "quit", and Enter runs it.
  Terminal again({VRICTL_BINARY, "--socket=" + vrid_.config.socket}, home);
  ASSERT_TRUE(again.shows("vrictl # "));
  again.type("\x10\r");
  EXPECT_EQ(again.exitCodeWithin(std::chrono::seconds(10 * timeScale())), 0);
}

TEST_F(VrictlShellTest, ReadsCommandsFromAPipeWithoutAPrompt) {
  std::string out;
  const std::string script = "printf 'pool\\nlist --vms\\ndominfo nosuch\\n' | " + std::string(VRICTL_BINARY) +
                             " --socket=" + vrid_.config.socket;
  const int code = runCommand({"/bin/sh", "-c", script}, &out, vrid_.tmp().sub("pipe.out"));
  EXPECT_EQ(code, 1);  // the last command's
  EXPECT_THAT(out, HasSubstr("Shared:"));
  EXPECT_THAT(out, HasSubstr("database"));
  EXPECT_THAT(out, HasSubstr("no VM with UUID or name nosuch"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("vrictl # ")));
}

}  // namespace
}  // namespace vri::testing
