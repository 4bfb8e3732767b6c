// vri-hook's configuration. libvirt runs the hook with an almost empty
// environment (LC_ALL, PATH, HOME, PWD), so it comes from a file:
// /etc/vri/hook.conf, `name = value` lines, `#` comments. A missing file
// means the defaults; a bad one is refused with the file and line.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace vri {

inline constexpr std::string_view kDefaultHookConfigPath = "/etc/vri/hook.conf";

enum class WhenUnreachable {
  kStartShared,  // a shared VM starts; vrid adopts it when it is back
  kRefuse,       // every VM start fails while vrid cannot be reached
};

struct HookConfig {
  std::string socket = "/run/vri/admin.sock";  // vrid's admin socket: vri-hook calls hook.sock beside it
  int timeoutMs = 3000;                        // deadline of every call to vrid
  WhenUnreachable whenUnreachable = WhenUnreachable::kStartShared;
  std::string qemuPidDir = "/run/libvirt/qemu";  // where libvirt writes <name>.pid
};

// vrid's hook socket (vri/hook_door.h): `hook.sock` in the admin socket's directory, root's alone
// like it. Derived rather than configured, so that vrid and the hook cannot disagree and hook.conf
// keeps naming the admin socket, as it always has.
std::string hookSocketBeside(const std::string& adminSocket);

// A setting's value as hook.conf and vrid's hook socket take it: without control characters; a path
// also absolute. INVALID_ARGUMENT names the setting.
Result<void> checkHookValue(std::string_view name, std::string_view value);
Result<void> checkHookPath(std::string_view name, std::string_view value);

Result<HookConfig> parseHookConfig(std::string_view text, std::string_view file);
// Reads `path`; a file that does not exist gives the defaults.
Result<HookConfig> loadHookConfig(const std::string& path);

}  // namespace vri
