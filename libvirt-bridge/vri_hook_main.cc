// vri-hook: libvirt's qemu hook. Install as /etc/libvirt/hooks/qemu (or a file
// under qemu.d/) before libvirtd starts. Configuration: /etc/vri/hook.conf,
// or the file named by VRI_HOOK_CONFIG.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "base/version.h"
#include "libvirt-bridge/hook.h"
#include "libvirt-bridge/xml_document.h"
#include "proto/unix_channel.h"

namespace {

// At most `limit` + 1 bytes, so that an oversized document is seen as such.
std::string readStdin(size_t limit) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n <= 0) break;
    if (text.size() <= limit) text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// What a person may ask of the hook (--help, --version), declared for CLI11. libvirt's own call is
// four arguments that are never flags (a domain may be named "-x"), and is not parsed as flags.
std::optional<int> answeredPerson(int argc, char** argv) {
  CLI::App app(
      "libvirt's qemu hook for VRI. libvirt runs it as `vri-hook DOMAIN OPERATION SUB-OPERATION EXTRA`\n"
      "with the domain XML on stdin; configured by " +
          std::string(vri::kDefaultHookConfigPath) + " (or the file $VRI_HOOK_CONFIG names).",
      "vri-hook");
  app.set_help_flag("-h,--help", "print this help and exit");
  bool version = false;
  app.add_flag("--version", version, "print vri-hook's version and exit");
  app.allow_extras();  // anything else is libvirt's, and never fails a VM here
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (version) {
    std::cout << vri::versionLine("vri-hook") << "\n";
    return 0;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    if (const std::optional<int> answered = answeredPerson(argc, argv)) return *answered;
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  // Always drain stdin: libvirt writes the whole document whatever the operation.
  const std::string xml = readStdin(vri::kMaxXmlBytes);
  if (!vri::hookReadsDomainXml(args)) return 0;

  const char* config_path = std::getenv("VRI_HOOK_CONFIG");
  auto config = vri::loadHookConfig(config_path != nullptr ? config_path : std::string(vri::kDefaultHookConfigPath));
  if (!config.ok()) {
    std::cerr << "vri: " << config.error().message() << "\n";
    return 1;
  }
  // vrid learns from the user agent which hook version calls it.
  auto channel = vri::unixChannel(config->socket, {.program = "vri-hook", .noRetries = true});
  auto stub = vri::v1::Vri::NewStub(channel);
  vri::GrpcHookVrid vrid(*stub, std::chrono::milliseconds(config->timeoutMs));
  const vri::HookOutcome outcome = vri::runHook(*config, args, xml, vrid);
  if (!outcome.out.empty()) std::fwrite(outcome.out.data(), 1, outcome.out.size(), stdout);
  if (!outcome.err.empty()) std::fwrite(outcome.err.data(), 1, outcome.err.size(), stderr);
  std::fflush(stdout);
  std::fflush(stderr);
  // Everything is said: skip gRPC's orderly shutdown (it joins its threads), which
  // would otherwise be a good part of the time libvirt waits for the hook.
  ::_exit(outcome.exitCode);
}
