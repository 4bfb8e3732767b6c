// vrictl top: live per-tenant usage, redrawn at every round vrid samples, like top(1).
// On a terminal it takes the screen and reads keys (c, m, t, n sort; q or Ctrl-C quits); otherwise,
// or with --once, it prints one table (or with --json the report) and ends.
#pragma once

#include <string>

#include "vrictl/commands.h"

namespace vri::ctl {

struct TopChoices {
  std::string sort = "cpu";
  bool once = false;
  bool json = false;
  int input = 0;  // the terminal's descriptors (tests drive it through a pseudo-terminal)
  int output = 1;
};

int runTop(CommandContext& c, const TopChoices& o);

}  // namespace vri::ctl
