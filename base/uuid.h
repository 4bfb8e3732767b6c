// The one rule for what a UUID is (a VM's identity, found in domain XML, on
// QEMU's command line and in API requests): 36 characters, hex digits in
// either case with dashes at positions 8, 13, 18 and 23.
#pragma once

#include <string_view>

namespace vri {

constexpr bool isUuid(std::string_view text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (dash ? c != '-' : !hex) return false;
  }
  return true;
}

}  // namespace vri
