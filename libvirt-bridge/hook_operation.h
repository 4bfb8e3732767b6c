// Which of libvirt's qemu hook calls VRI acts on (`<domain> <operation>
// <sub-operation> <extra>`), decided from argv alone: vri-hook answers every
// other call at once, before it reads a configuration or reaches vrid.
#pragma once

#include <string>
#include <vector>

namespace vri {

enum class HookOperation {
  kPrepare,    // prepare begin
  kStarted,    // started begin
  kRelease,    // stopped end, release end
  kReconnect,  // reconnect begin
  kIncoming,   // migrate begin, restore begin
  kOther,      // everything else: exit 0 at once
};

// `args`: argv[1..], as libvirt passes them.
HookOperation hookOperationOf(const std::vector<std::string>& args);

// Whether VRI acts on the call at all (and so needs the domain XML from stdin).
inline bool hookReadsDomainXml(const std::vector<std::string>& args) {
  return hookOperationOf(args) != HookOperation::kOther;
}

}  // namespace vri
