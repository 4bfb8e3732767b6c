// vrictl's interactive shell, as virsh's: a prompt with line editing, history
// kept between sessions, and TAB completion of commands, flags and tenants'
// names (libedit). On a pipe it reads commands line by line, without a prompt.
#pragma once

#include <string>

#include "vrictl/commands.h"
#include "vrictl/completion.h"

namespace vri::ctl {

// Where the history is kept: $XDG_STATE_HOME/vrictl/history, else ~/.local/state/vrictl/history;
// empty (no history kept) when neither is known.
std::string defaultHistoryPath();

// Runs until EOF (Ctrl-D), `quit` or `exit`. Returns 0 at a terminal; from a pipe, the last command's exit code.
int runShell(CommandContext& context, const CompletionSource& completion, const std::string& historyPath);

}  // namespace vri::ctl
