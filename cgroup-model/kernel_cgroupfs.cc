#include "cgroup-model/kernel_cgroupfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "base/quote.h"

namespace vri {

std::string CgroupDir::describe() const { return hierarchy + ":" + path.str(); }

Result<void> validateControlFileName(std::string_view file) {
  if (file.empty() || file.find('/') != std::string_view::npos || file == "." || file == "..") {
    return Error::invalidArgument("invalid control file name " + quoteForMessage(file));
  }
  return {};
}

namespace {

Result<void> validateHierarchy(std::string_view hierarchy) {
  if (hierarchy.empty()) return {};
  if (hierarchy.find('/') != std::string_view::npos || hierarchy == "." || hierarchy == "..") {
    return Error::invalidArgument("invalid cgroup hierarchy " + quoteForMessage(hierarchy));
  }
  return {};
}

// Closes a file descriptor when it goes out of scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::string> readWholeFile(const std::string& path) {
  Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Error::fromErrno(errno, "open " + path);
  std::string content;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(file.fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::fromErrno(errno, "read " + path);
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  if (!content.empty() && content.back() == '\n') content.pop_back();
  return content;
}

Result<void> writeWholeFile(const std::string& path, std::string_view value) {
  // A write of no bytes never reaches a kernfs file's handler: an empty value (an empty
  // cpuset.cpus.exclusive) is written as the newline the kernel strips.
  const std::string_view bytes = value.empty() ? std::string_view("\n") : value;
  Fd file{::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC)};
  if (file.fd < 0) return Error::fromErrno(errno, "open " + path);
  const ssize_t n = ::write(file.fd, bytes.data(), bytes.size());
  if (n < 0) return Error::fromErrno(errno, "write " + quoteForMessage(value) + " to " + path);
  if (static_cast<size_t>(n) != bytes.size()) {
    return Error(ErrorCode::kUnavailable, "short write of " + quoteForMessage(value) + " to " + path);
  }
  return {};
}

Result<KernelCgroupFs> KernelCgroupFs::create(std::string cgroupRoot, std::string procRoot) {
  if (!cgroupRoot.starts_with('/') || !procRoot.starts_with('/')) {
    return Error::invalidArgument("cgroup and proc roots must be absolute paths (got " + quoteForMessage(cgroupRoot) +
                                  ", " + quoteForMessage(procRoot) + ")");
  }
  while (cgroupRoot.size() > 1 && cgroupRoot.ends_with('/')) cgroupRoot.pop_back();
  while (procRoot.size() > 1 && procRoot.ends_with('/')) procRoot.pop_back();
  return KernelCgroupFs(std::move(cgroupRoot), std::move(procRoot));
}

std::string KernelCgroupFs::directory(const CgroupDir& dir) const {
  std::string path = cgroupRoot_;
  if (!dir.hierarchy.empty()) path += "/" + dir.hierarchy;
  if (!dir.path.isRoot()) path += "/" + dir.path.str();
  return path;
}

Result<std::string> KernelCgroupFs::read(const CgroupDir& dir, std::string_view file) const {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  VRI_TRY(validateControlFileName(file));
  return readWholeFile(directory(dir) + "/" + std::string(file));
}

Result<void> KernelCgroupFs::write(const CgroupDir& dir, std::string_view file, std::string_view value) {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  VRI_TRY(validateControlFileName(file));
  return writeWholeFile(directory(dir) + "/" + std::string(file), value);
}

Result<void> KernelCgroupFs::mkdir(const CgroupDir& dir) {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  const std::string path = directory(dir);
  if (::mkdir(path.c_str(), 0755) != 0) return Error::fromErrno(errno, "mkdir " + path);
  return {};
}

Result<void> KernelCgroupFs::rmdir(const CgroupDir& dir) {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  if (dir.path.isRoot()) return Error::invalidArgument("refusing to remove the root of " + dir.hierarchy);
  const std::string path = directory(dir);
  if (::rmdir(path.c_str()) != 0) return Error::fromErrno(errno, "rmdir " + path);
  return {};
}

bool KernelCgroupFs::exists(const CgroupDir& dir) const {
  if (!validateHierarchy(dir.hierarchy).ok()) return false;
  struct stat info {};
  return ::stat(directory(dir).c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

Result<std::vector<std::string>> KernelCgroupFs::children(const CgroupDir& dir) const {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  const std::string path = directory(dir);
  std::unique_ptr<DIR, int (*)(DIR*)> handle(::opendir(path.c_str()), ::closedir);
  if (!handle) return Error::fromErrno(errno, "opendir " + path);
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(handle.get())) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (entry->d_type == DT_DIR) {
      names.push_back(name);
    } else if (entry->d_type == DT_UNKNOWN) {
      struct stat info {};
      if (::stat((path + "/" + name).c_str(), &info) == 0 && S_ISDIR(info.st_mode)) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

Result<void> validateProcPath(std::string_view relative) {
  if (relative.empty() || relative.starts_with('/') || relative.find("..") != std::string_view::npos) {
    return Error::invalidArgument("invalid proc path " + quoteForMessage(relative));
  }
  return {};
}

}  // namespace

Result<std::string> KernelCgroupFs::readProc(std::string_view relative) const {
  VRI_TRY(validateProcPath(relative));
  return readWholeFile(procRoot_ + "/" + std::string(relative));
}

Result<std::unique_ptr<KeptFile>> KernelCgroupFs::keepOpen(const CgroupDir& dir, std::string_view file) const {
  VRI_TRY(validateHierarchy(dir.hierarchy));
  VRI_TRY(validateControlFileName(file));
  return openKeptFile(directory(dir) + "/" + std::string(file));
}

Result<std::unique_ptr<KeptFile>> KernelCgroupFs::keepProcOpen(std::string_view relative) const {
  VRI_TRY(validateProcPath(relative));
  return openKeptFile(procRoot_ + "/" + std::string(relative));
}

}  // namespace vri
