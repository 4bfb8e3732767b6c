#include "libvirt-bridge/hook_io.h"

#include <unistd.h>

#include <cerrno>

namespace vri {

namespace {

void writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // libvirt stopped reading: nothing else to tell it
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string readHookStdin(size_t limit) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (text.size() <= limit) text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

void writeHookOutput(std::string_view out, std::string_view err) {
  writeAll(STDOUT_FILENO, out);
  writeAll(STDERR_FILENO, err);
}

}  // namespace vri
