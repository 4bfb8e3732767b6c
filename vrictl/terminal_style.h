// How vrictl's pictures are drawn: colour or plain text, and how wide.
#pragma once

#include <string>
#include <string_view>

namespace vri::ctl {

struct TerminalStyle {
  bool colour = false;
  int width = 80;

  // `text` in ANSI colour `code` ("32" green, "2" dim, "1;31" bold red), or as it is without colour.
  std::string paint(std::string_view text, std::string_view code) const {
    if (!colour || code.empty()) return std::string(text);
    return "\033[" + std::string(code) + "m" + std::string(text) + "\033[0m";
  }
};

// Colour when `when` is "always", or "auto" on a terminal that is not dumb and no NO_COLOR is set
// (no-color.org); the width from COLUMNS when set, else the terminal's, else 80.
TerminalStyle styleFor(std::string_view when, int fd);

}  // namespace vri::ctl
