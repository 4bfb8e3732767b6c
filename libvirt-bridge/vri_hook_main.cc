// vri-hook: libvirt's qemu hook. Install as /etc/libvirt/hooks/qemu (or a file
// under qemu.d/) before libvirtd starts. Configuration: /etc/vri/hook.conf,
// or the file named by VRI_HOOK_CONFIG.
//
// libvirt runs it several times per VM start, for every VM, whatever the
// operation, and waits for each: it loads nothing but the C and C++ runtimes.
// The calls VRI ignores are answered from argv; the others go to vrid's hook
// socket whole (argv and the domain XML), where the hook logic runs, and its
// answer is printed as it came. When vrid cannot be reached, vri-hook-offline
// decides from the domain XML whether the VM may start without it.
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "base/version.h"
#include "libvirt-bridge/hook_config.h"
#include "libvirt-bridge/hook_io.h"
#include "libvirt-bridge/hook_operation.h"
#include "libvirt-bridge/hook_socket_client.h"
#include "libvirt-bridge/xml_limits.h"

namespace {

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

// vri-hook-offline beside this program (a build tree), or in ../libexec/vri from it (sbin/ in an
// installed or unpacked tree), else where the package installs it (a copy of vri-hook elsewhere).
std::string offlineHelper() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (const auto& candidate :
         {self.parent_path() / "vri-hook-offline", self.parent_path().parent_path() / "libexec/vri/vri-hook-offline"}) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
  }
  return VRI_HOOK_OFFLINE_PATH;
}

// vrid could not be reached for `reason`: vri-hook-offline decides, with the domain XML on its stdin.
int answerOffline(const std::string& reason, const std::vector<std::string>& args, const std::string& xml) {
  const std::string helper = offlineHelper();
  const int fd = ::memfd_create("domain-xml", MFD_CLOEXEC);
  bool staged = fd >= 0;
  for (size_t written = 0; staged && written < xml.size();) {
    const ssize_t n = ::write(fd, xml.data() + written, xml.size() - written);
    staged = n > 0 || (n < 0 && errno == EINTR);
    if (n > 0) written += static_cast<size_t>(n);
  }
  // dup2 leaves the new stdin open across exec.
  if (staged) staged = ::lseek(fd, 0, SEEK_SET) == 0 && ::dup2(fd, STDIN_FILENO) == STDIN_FILENO;
  if (staged) {
    std::vector<std::string> words = {helper, "--reason", reason, "--"};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    ::execv(helper.c_str(), argv.data());
  }
  const std::string why = std::strerror(errno);
  vri::writeHookOutput("",
                       "vri: " + reason + "; and " + helper + " cannot run (" + why + "), so the VM is not started\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    if (const std::optional<int> answered = answeredPerson(argc, argv)) return *answered;
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string xml = vri::readHookStdin(vri::kMaxXmlBytes);
  if (!vri::hookReadsDomainXml(args)) return 0;

  const char* config_path = std::getenv("VRI_HOOK_CONFIG");
  auto config = vri::loadHookConfig(config_path != nullptr ? config_path : std::string(vri::kDefaultHookConfigPath));
  if (!config.ok()) {
    vri::writeHookOutput("", "vri: " + config.error().message() + "\n");
    return 1;
  }
  const std::string frame =
      vri::encodeHookCallFrame({.args = args,
                                .domainXml = xml,
                                .clientVersion = vri::clientUserAgent("vri-hook"),
                                .refuseWhenUnreachable = config->whenUnreachable == vri::WhenUnreachable::kRefuse,
                                .qemuPidDir = config->qemuPidDir});
  auto answer =
      vri::askVridHook(vri::hookSocketBeside(config->socket), frame, std::chrono::milliseconds(config->timeoutMs));
  if (answer.ok()) {
    vri::writeHookOutput(answer->out, answer->err);
    return answer->exitCode;
  }
  const vri::ErrorCode code = answer.error().code();
  if (code != vri::ErrorCode::kUnavailable && code != vri::ErrorCode::kDeadlineExceeded) {
    vri::writeHookOutput("", "vri: " + answer.error().message() + "\n");
    return 1;
  }
  return answerOffline(answer.error().message(), args, xml);
}
