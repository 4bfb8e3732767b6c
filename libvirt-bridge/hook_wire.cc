#include "libvirt-bridge/hook_wire.h"

namespace vri {

namespace {

// Wire types (protobuf encoding): what follows a field's key.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

void putVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putBytes(std::string& out, uint32_t field, std::string_view bytes) {
  putVarint(out, (uint64_t{field} << 3) | kLengthDelimited);
  putVarint(out, bytes.size());
  out.append(bytes);
}

// Reads a varint at the front of `in`, consuming it; false when it is cut short or longer than 10 bytes.
bool takeVarint(std::string_view& in, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (in.empty()) return false;
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

std::string hookFrameHeader(size_t messageBytes) {
  const auto n = static_cast<uint32_t>(messageBytes);
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
}

uint32_t hookFrameSize(std::string_view header) {
  uint32_t n = 0;
  for (size_t i = 0; i < kHookFrameHeaderBytes && i < header.size(); ++i)
    n = (n << 8) | static_cast<uint8_t>(header[i]);
  return n;
}

std::string encodeHookCallFrame(const HookCallFields& call) {
  std::string message;
  message.reserve(call.domainXml.size() + 256);
  for (const std::string& arg : call.args) putBytes(message, 1, arg);
  if (!call.domainXml.empty()) putBytes(message, 2, call.domainXml);
  if (!call.clientVersion.empty()) putBytes(message, 3, call.clientVersion);
  if (call.refuseWhenUnreachable) {
    putVarint(message, (uint64_t{4} << 3) | kVarint);
    putVarint(message, 1);
  }
  if (!call.qemuPidDir.empty()) putBytes(message, 5, call.qemuPidDir);
  return hookFrameHeader(message.size()) + message;
}

Result<HookAnswerFields> decodeHookAnswer(std::string_view in) {
  HookAnswerFields answer;
  const auto bad = [](const std::string& why) { return Error::invalidArgument("not a hook answer: " + why); };
  while (!in.empty()) {
    uint64_t key = 0;
    if (!takeVarint(in, key)) return bad("a field's key is cut short");
    const uint64_t field = key >> 3;
    const auto type = static_cast<uint32_t>(key & 7);
    if (type == kVarint) {
      uint64_t value = 0;
      if (!takeVarint(in, value)) return bad("field " + std::to_string(field) + "'s value is cut short");
      // int32 as protobuf writes it: a negative number sign-extended to 64 bits.
      if (field == 1) answer.exitCode = static_cast<int>(static_cast<int32_t>(value));
    } else if (type == kLengthDelimited) {
      uint64_t size = 0;
      if (!takeVarint(in, size) || size > in.size()) {
        return bad("field " + std::to_string(field) + " is longer than the message");
      }
      const std::string_view bytes = in.substr(0, size);
      in.remove_prefix(size);
      if (field == 2) answer.out = bytes;
      if (field == 3) answer.err = bytes;
    } else if (type == kFixed64 || type == kFixed32) {
      const size_t size = type == kFixed64 ? 8 : 4;
      if (in.size() < size) return bad("field " + std::to_string(field) + " is cut short");
      in.remove_prefix(size);
    } else {
      return bad("field " + std::to_string(field) + " has wire type " + std::to_string(type));
    }
    if (field == 0) return bad("field number 0");
  }
  return answer;
}

}  // namespace vri
