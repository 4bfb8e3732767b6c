#include "libvirt-bridge/hook_config.h"

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

#include "base/owned_path.h"
#include "base/quote.h"

namespace vri {

namespace {

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::string hookSocketBeside(const std::string& adminSocket) {
  const size_t slash = adminSocket.rfind('/');
  return (slash == std::string::npos ? std::string() : adminSocket.substr(0, slash + 1)) + "hook.sock";
}

Result<void> checkHookValue(std::string_view name, std::string_view value) {
  // A path with a control character in it is never what was meant (and a NUL would cut it short).
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Error::invalidArgument(std::string(name) + ": a value without control characters, not " +
                                    quoteForMessage(value));
    }
  }
  return {};
}

Result<void> checkHookPath(std::string_view name, std::string_view value) {
  VRI_TRY(checkHookValue(name, value));
  if (value.empty() || value.front() != '/') return Error::invalidArgument(std::string(name) + ": an absolute path");
  return {};
}

Result<HookConfig> parseHookConfig(std::string_view text, std::string_view file) {
  HookConfig config;
  int line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view raw = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    ++line_number;
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string at = std::string(file) + ":" + std::to_string(line_number);
    const std::string where = at + ": ";
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Error::invalidArgument(where + "expected `name = value`");
    const std::string_view name = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    VRI_TRY(checkHookValue(name, value).context(at));
    if (name == "socket") {
      VRI_TRY(checkHookPath(name, value).context(at));
      config.socket = value;
    } else if (name == "timeout_ms") {
      int ms = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc() || ptr != value.data() + value.size() || ms < 10 || ms > 600000) {
        return Error::invalidArgument(where + "timeout_ms: a number of milliseconds from 10 to 600000");
      }
      config.timeoutMs = ms;
    } else if (name == "when_unreachable") {
      if (value == "start-shared") {
        config.whenUnreachable = WhenUnreachable::kStartShared;
      } else if (value == "refuse") {
        config.whenUnreachable = WhenUnreachable::kRefuse;
      } else {
        return Error::invalidArgument(where + "when_unreachable: start-shared or refuse, not " +
                                      quoteForMessage(value));
      }
    } else if (name == "qemu_pid_dir") {
      VRI_TRY(checkHookPath(name, value).context(at));
      config.qemuPidDir = value;
    } else {
      return Error::invalidArgument(where + "unknown option " + quoteForMessage(name));
    }
  }
  return config;
}

Result<HookConfig> loadHookConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno != ENOENT) return Error::fromErrno(errno, "read " + path);
    // No file: the defaults, unless someone else could put one there.
    VRI_TRY(refuseDirectoryOfWritableByOthers(path, "hook config's directory"));
    return HookConfig{};
  }
  // Whoever may write it decides where the hook sends VMs and whether they start.
  VRI_TRY(refuseFileWritableByOthers(path, "hook config"));
  std::ostringstream text;
  text << in.rdbuf();
  return parseHookConfig(text.str(), path);
}

}  // namespace vri
