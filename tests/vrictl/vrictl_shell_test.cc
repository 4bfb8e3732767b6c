// vrictl's shell as a user meets it, through a pseudo-terminal: the prompt, TAB
// completing commands and a VM's name from vrid, a list of choices when TAB is
// ambiguous, Ctrl-C ending `events --follow` but not the shell, and the history
// kept for the next session. And the same shell reading commands from a pipe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "tests/support/pseudo_terminal.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_api_fixture.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

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

    // One recent event: the pod's admission is shown whether vrictl subscribed before it or after.
    terminal.type("events --follow --recent 1\r");
    admitPod(kUid);
    ASSERT_TRUE(terminal.shows(kUid));
    terminal.type("\x03");  // Ctrl-C
    ASSERT_TRUE(terminal.shows("vrictl # "));
    terminal.type("quit\r");
    EXPECT_EQ(terminal.exitCode(), 0);
  }
  const std::string history = readFile(home + "/.local/state/vrictl/history");
  // libedit's format (blanks as \040): the lines as TAB completed them, each word with its space.
  EXPECT_THAT(history, HasSubstr("\nlist\\040--vms\\040\n"));
  EXPECT_THAT(history, HasSubstr("\ndominfo\\040database\\040\n"));
  EXPECT_THAT(history, HasSubstr("\nevents\\040--follow\\040--recent\\0401\n"));

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

// bash's completion (deploy/vrictl.bash-completion, installed as bash-completion/completions/vrictl)
// offers what the shell offers, from `vrictl __complete`: commands, flags, and names asked of vrid
// through the socket the line names. The shell's own words (quit, exit) are not vrictl commands.
TEST_F(VrictlShellTest, BashCompletesCommandsFlagsAndNamesAsTheShellDoes) {
  const auto complete = [&](const std::string& line) {
    const std::string bin = std::filesystem::path(VRICTL_BINARY).parent_path().string();
    const std::string script = "PATH=" + bin + ":$PATH; source " + std::string(VRI_SOURCE_DIR) +
                               "/deploy/vrictl.bash-completion; COMP_LINE='" + line +
                               "'; COMP_POINT=${#COMP_LINE}; _vrictl; printf '%s\\n' \"${COMPREPLY[@]}\"";
    std::string out;
    EXPECT_EQ(runCommand({"/bin/bash", "-c", script}, &out, vrid_.tmp().sub("bash.out")), 0) << out;
    return out;
  };
  EXPECT_EQ(complete("vrictl dom"), "dominfo\n");
  EXPECT_EQ(complete("vrictl po"), "podinfo\npool\n");
  EXPECT_EQ(complete("vrictl list --v"), "--vms\n");
  EXPECT_THAT(complete("vrictl "), ::testing::Not(HasSubstr("quit")));
  EXPECT_EQ(complete("vrictl --socket " + vrid_.config.socket + " dominfo da"), "database\n");
  EXPECT_EQ(complete("vrictl --socket=" + vrid_.config.socket + " --json vcpupin data"), "database\n");
}

}  // namespace
}  // namespace vri::testing
