// What TAB offers in vrictl's shell: commands, their flags, and tenants' names.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "vrictl/commands.h"

namespace vri::ctl {

struct CompletionSource {
  std::vector<CommandSummary> commands;
  // Asked only when a VM's or a pod's name is wanted: names and ids, fresh from vrid.
  std::function<std::vector<std::string>()> vms;
  std::function<std::vector<std::string>()> pods;
  // The shell's own words (help, quit, exit) among the commands.
  bool shellWords = true;
  // The program's options ("--socket": whether it takes a value), which may stand before the command.
  std::map<std::string, bool> programOptions = {};
};

// A command line as the shell would see it: without the program's options before the command,
// which bash's completion hands over with the rest.
std::string withoutProgramOptions(const std::string& line, const std::map<std::string, bool>& programOptions);

// Every word that completes the last word of `line` (the text before the cursor), sorted.
std::vector<std::string> completionsFor(const std::string& line, const CompletionSource& source);

// The longest prefix all `words` share.
std::string commonPrefix(const std::vector<std::string>& words);

// A shell line's words: split at blanks, with '...' and "..." quoting.
std::vector<std::string> splitWords(const std::string& line);

}  // namespace vri::ctl
