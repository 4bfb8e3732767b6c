// Files kept open for sampling: the kernel's (one descriptor, one pread per read) and the
// default for any other CgroupFs (each read through the interface again).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "cgroup-model/kernel_cgroupfs.h"

namespace vri {

namespace {

class DescriptorFile final : public KeptFile {
 public:
  DescriptorFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~DescriptorFile() override { ::close(fd_); }
  DescriptorFile(const DescriptorFile&) = delete;
  DescriptorFile& operator=(const DescriptorFile&) = delete;

  Result<std::string> read() override {
    // cgroup and /proc files are generated at read time: a read from offset 0 is the file as it is
    // now. Usage files are a few hundred bytes; a longer one (/proc/stat on many CPUs) is read on.
    std::string content;
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::pread(fd_, buffer, sizeof buffer, static_cast<off_t>(content.size()));
      if (n < 0) {
        if (errno == EINTR) continue;
        return Error::fromErrno(errno, "read " + path_);
      }
      if (n == 0) break;
      content.append(buffer, static_cast<size_t>(n));
    }
    if (!content.empty() && content.back() == '\n') content.pop_back();
    return content;
  }

 private:
  int fd_;
  std::string path_;
};

// Reads through the interface each time: fixtures and wrappers, where no descriptor exists.
class RereadFile final : public KeptFile {
 public:
  explicit RereadFile(std::function<Result<std::string>()> read) : read_(std::move(read)) {}
  Result<std::string> read() override { return read_(); }

 private:
  std::function<Result<std::string>()> read_;
};

}  // namespace

Result<std::unique_ptr<KeptFile>> openKeptFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::fromErrno(errno, "open " + path);
  return std::unique_ptr<KeptFile>(std::make_unique<DescriptorFile>(fd, path));
}

Result<std::unique_ptr<KeptFile>> CgroupFs::keepOpen(const CgroupDir& dir, std::string_view file) const {
  VRI_TRY(read(dir, file));  // fails now, as an open would, when the file is not there
  return std::unique_ptr<KeptFile>(
      std::make_unique<RereadFile>([this, dir, name = std::string(file)] { return read(dir, name); }));
}

Result<std::unique_ptr<KeptFile>> CgroupFs::keepProcOpen(std::string_view relative) const {
  VRI_TRY(readProc(relative));
  return std::unique_ptr<KeptFile>(
      std::make_unique<RereadFile>([this, path = std::string(relative)] { return readProc(path); }));
}

}  // namespace vri
