// A tmpfs of a few MiB mounted on a directory for a test's life (as root), which fill() fills to its last
// byte and free() empties again: a state directory whose disk is full, on demand.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace vri::testing {

class SmallFilesystem {
 public:
  // Empty when mounted, else why not.
  std::string mount(const std::string& dir, const std::string& size = "16m") {
    std::filesystem::create_directories(dir);
    if (::mount("vri-test-small", dir.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0700").c_str()) != 0)
      return "mounting a tmpfs on " + dir + ": " + std::strerror(errno);
    dir_ = dir;
    return "";
  }
  ~SmallFilesystem() {
    if (!dir_.empty()) ::umount2(dir_.c_str(), MNT_DETACH);
  }

  void fill() const {
    const int fd = ::open(filler().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    const std::vector<char> block(64 * 1024, 'f');
    for (size_t size = block.size(); size > 0; size /= 2)  // down to the last partial block
      while (::write(fd, block.data(), size) > 0) {
      }
    ::close(fd);
  }
  void free() const { std::filesystem::remove(filler()); }

 private:
  std::string filler() const { return dir_ + "/vri-filler"; }
  std::string dir_;
};

}  // namespace vri::testing
