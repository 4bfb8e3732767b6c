// vrictl: administers vrid the way virsh administers libvirt; with no command, a shell.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "base/version.h"
#include "vrictl/commands.h"
#include "vrictl/completion.h"
#include "vrictl/shell.h"

int main(int argc, char** argv) {
  using namespace vri::ctl;
  if (vri::answeredVersion(argc, argv, "vrictl")) return 0;
  std::unique_ptr<VridApi> vrid;
  std::string socket;
  const auto contextFor = [&](const ProgramOptions& options) {
    socket = options.socket;
    CommandContext context{[&]() -> VridApi& {
                             if (!vrid) vrid = connectToVrid(socket);
                             return *vrid;
                           },
                           std::cout, std::cerr, styleFor(options.colour, STDOUT_FILENO)};
    return context;
  };
  const ProgramRun run = runProgram(std::vector<std::string>(argv + 1, argv + argc), contextFor);
  if (!run.shell) return run.exitCode;
  CommandContext context = contextFor(run.options);
  context.inShell = true;
  return runShell(context, completionSourceFor(context), defaultHistoryPath());
}
