// vri-hook-offline: what vri-hook answers libvirt when vrid could not be
// reached (run by vri-hook with the domain XML on stdin, not by hand). A VM
// that needs exclusive CPUs fails to start, saying why; a shared VM starts
// (or not: hook.conf's when_unreachable) and vrid adopts it once it is back.
// It is the hook logic itself (hook.h) with a vrid that answers nothing, so
// that it needs the domain XML read, which the front does not do.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/version.h"
#include "libvirt-bridge/hook.h"
#include "libvirt-bridge/hook_io.h"
#include "libvirt-bridge/xml_limits.h"

int main(int argc, char** argv) {
  CLI::App app(
      "vri-hook's answer to libvirt when vrid cannot be reached; vri-hook runs it with libvirt's arguments\n"
      "and the domain XML on stdin.",
      "vri-hook-offline");
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", vri::versionLine("vri-hook-offline"), "print the version and exit");
  std::string reason;
  std::vector<std::string> args;
  app.add_option("--reason", reason, "why vrid could not be reached")->required();
  app.add_option("args", args, "libvirt's hook arguments: DOMAIN OPERATION SUB-OPERATION EXTRA");
  CLI11_PARSE(app, argc, argv);

  const std::string xml = vri::readHookStdin(vri::kMaxXmlBytes);
  const char* config_path = std::getenv("VRI_HOOK_CONFIG");
  auto config = vri::loadHookConfig(config_path != nullptr ? config_path : std::string(vri::kDefaultHookConfigPath));
  if (!config.ok()) {
    vri::writeHookOutput("", "vri: " + config.error().message() + "\n");
    return 1;
  }
  config->socket = vri::hookSocketBeside(config->socket);  // where vri-hook looked, for the messages
  vri::UnreachableHookVrid vrid(reason);
  const vri::HookOutcome outcome = vri::runHook(*config, args, xml, vrid);
  vri::writeHookOutput(outcome.out, outcome.err);
  return outcome.exitCode;
}
