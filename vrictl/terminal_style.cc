#include "vrictl/terminal_style.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace vri::ctl {

TerminalStyle styleFor(std::string_view when, int fd) {
  TerminalStyle style;
  const bool terminal = ::isatty(fd) == 1;
  const char* term = std::getenv("TERM");
  const char* no_colour = std::getenv("NO_COLOR");
  style.colour = when == "always" || (when == "auto" && terminal && term != nullptr &&
                                      std::string_view(term) != "dumb" && (no_colour == nullptr || *no_colour == 0));
  winsize size{};
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr && std::atoi(columns) > 0) {
    style.width = std::atoi(columns);
  } else if (terminal && ::ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
    style.width = size.ws_col;
  }
  return style;
}

}  // namespace vri::ctl
