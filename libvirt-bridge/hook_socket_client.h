// vri-hook's one call to vrid: a HookCall frame out on vrid's hook socket, a
// HookAnswer back, all within the hook's deadline. Plain POSIX sockets: the
// program that makes this call loads nothing but the C and C++ runtimes.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"
#include "libvirt-bridge/hook_wire.h"

namespace vri {

// `frame`: encodeHookCallFrame's. Errors: kUnavailable when nothing answers on `socket` (no
// socket, nobody listening, the connection closed without an answer, or an answer that is not
// a hook answer: the path is some other socket), kDeadlineExceeded when `timeout` passes first.
Result<HookAnswerFields> askVridHook(const std::string& socket, std::string_view frame,
                                     std::chrono::milliseconds timeout);

}  // namespace vri
