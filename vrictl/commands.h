// vrictl's commands: one command line (from argv or from a shell's line) parsed
// with CLI11, run against vrid, written to `out` and `err`.
//
// Exit codes, as virsh's: 0 done, 1 vrid refused or failed (or could not be
// reached), 2 the command line is wrong.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "vrictl/terminal_style.h"
#include "vrictl/vrid_api.h"

namespace vri::ctl {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// What the program's own options chose (argv only; a shell keeps them).
struct ProgramOptions {
  std::string socket = "/run/vri/vri.sock";
  std::string colour = "auto";  // auto | always | never
};

struct CommandContext {
  // vrid, connected when a command first needs it (`--help` needs no vrid).
  std::function<VridApi&()> vrid;
  std::ostream& out;
  std::ostream& err;
  TerminalStyle style;
  bool inShell = false;
  // Set by the shell while a command runs: true once the user pressed Ctrl-C (ends `events --follow`).
  std::function<bool()> interrupted = [] { return false; };
};

// The result of reading argv: a command ran (its exit code), or none was given (`shell`).
struct ProgramRun {
  int exitCode = kExitOk;
  bool shell = false;  // no command: the caller starts the shell with `options`
  ProgramOptions options;
};

// Prints vrid's refusal or failure (and which socket changes need), and gives the exit code.
int reportFailure(CommandContext& c, const Error& error);

struct CompletionSource;  // completion.h
// What TAB offers (the shell's, and bash's through `vrictl __complete LINE`): commands and flags
// from the declarations that parse them, names asked of the vrid `context` reaches.
CompletionSource completionSourceFor(CommandContext& context);

// vrictl ARGS...: the program's options, then a command or none.
ProgramRun runProgram(const std::vector<std::string>& args,
                      const std::function<CommandContext(const ProgramOptions&)>& contextFor);
// One shell line's words (no program options).
int runShellCommand(const std::vector<std::string>& words, CommandContext& context);

// For completion: every command and its flags.
struct CommandSummary {
  std::string name;
  std::vector<std::string> flags;
  enum class Argument { kNone, kVm, kPod } argument = Argument::kNone;
};
std::vector<CommandSummary> commandSummaries();

}  // namespace vri::ctl
