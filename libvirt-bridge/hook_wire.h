// vri-hook's side of the hook socket (proto/hook_call.proto): a HookCall
// encoded and a HookAnswer decoded by hand, in protobuf's wire format, so that
// the program libvirt runs on every VM start loads no protobuf, gRPC or
// libxml2 (linked dynamically, as Debian ships them, binding their symbols
// alone cost ~20 ms per exec). vrid reads and writes the same messages with
// the generated classes; tests check both ends against each other.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vri {

// A frame's size prefix, and the largest message either side accepts: a 1 MiB
// domain XML (kMaxXmlBytes) rewritten, with room for the rest.
inline constexpr size_t kHookFrameHeaderBytes = 4;
inline constexpr size_t kMaxHookMessageBytes = 4u << 20;

struct HookCallFields {
  std::vector<std::string> args = {};
  std::string_view domainXml = {};
  std::string clientVersion = {};
  bool refuseWhenUnreachable = false;
  std::string qemuPidDir = {};
};

struct HookAnswerFields {
  int exitCode = 0;
  std::string out;
  std::string err;
};

// The message as one frame: its size prefix, then the encoded HookCall.
std::string encodeHookCallFrame(const HookCallFields& call);

// A HookAnswer message (the frame's body); INVALID_ARGUMENT, with the reason, for bytes that are not one.
Result<HookAnswerFields> decodeHookAnswer(std::string_view message);

// A frame's size prefix: big-endian, 4 bytes.
std::string hookFrameHeader(size_t messageBytes);
uint32_t hookFrameSize(std::string_view header);

}  // namespace vri
