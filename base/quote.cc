#include "base/quote.h"

#include <cstdio>

namespace vri {

std::string quoteForMessage(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  std::string out = "\"";
  const std::string_view shown = text.substr(0, kMaxShown);
  for (char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += '"';
  return out;
}

std::string asOneLine(std::string_view text) {
  std::string out;
  bool gap = false;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || c == ' ') {
      gap = true;
      continue;
    }
    if (gap && !out.empty()) out += ' ';
    gap = false;
    out += c;
  }
  return out;
}

}  // namespace vri
