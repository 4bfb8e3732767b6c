#include "vri/kubelet_checkpoint_text.h"

#include <charconv>

#include "base/quote.h"

namespace vri::kubelet_text {

uint32_t fnv32a(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

std::string goJsonString(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == '<' || c == '>' || c == '&') {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

Result<YAML::Node> loadObject(std::string_view text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::invalidArgument(origin + ": not JSON: " + e.msg);
  }
  if (!root.IsMap()) return Error::invalidArgument(origin + ": want a JSON object");
  return root;
}

Result<std::string> stringMember(const YAML::Node& object, const char* key, const std::string& origin) {
  const YAML::Node node = object[key];
  if (!node) return std::string();
  if (!node.IsScalar()) return Error::invalidArgument(origin + ": " + key + " is not a string");
  return node.Scalar();
}

Result<uint64_t> unsignedNumber(const YAML::Node& node, const std::string& what) {
  const std::string digits = node && node.IsScalar() ? node.Scalar() : std::string();
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
    return Error::invalidArgument(what + " " + quoteForMessage(digits) + " is not a whole number");
  return value;
}

Result<uint64_t> checksumMember(const YAML::Node& object, const std::string& origin) {
  const YAML::Node checksum = object["checksum"];
  if (!checksum) return uint64_t{0};
  return unsignedNumber(checksum, origin + ": checksum");
}

Result<void> verifyChecksum(uint64_t stored, uint32_t computed, const std::string& origin) {
  if (stored == 0 || stored == computed) return {};
  return Error(ErrorCode::kDataLoss, origin + ": its checksum " + std::to_string(stored) + " is not its contents' (" +
                                         std::to_string(computed) + "): kubelet refuses it as corrupted");
}

}  // namespace vri::kubelet_text
