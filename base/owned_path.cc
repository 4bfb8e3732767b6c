#include "base/owned_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace vri {

namespace {

std::string modeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

namespace {

Result<void> refuseWritableByOthers(const struct stat& st, const std::string& path, const std::string& what) {
  const std::string refuse = what + ": " + path + " ";
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    return Error::failedPrecondition(refuse + "belongs to uid " + std::to_string(st.st_uid) +
                                     ", who could change it; it must belong to root");
  if ((st.st_mode & S_IWOTH) != 0)
    return Error::failedPrecondition(refuse + "may be written by everyone (mode " + modeText(st.st_mode) +
                                     "); take that away (chmod o-w)");
  if ((st.st_mode & S_IWGRP) != 0 && st.st_gid != 0)
    return Error::failedPrecondition(refuse + "may be written by group " + std::to_string(st.st_gid) + " (mode " +
                                     modeText(st.st_mode) + "); take that away (chmod g-w)");
  return {};
}

std::string fileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<void> refuseWritableByOthers(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::fromErrno(errno, what + ": stat " + path);
  return refuseWritableByOthers(st, path, what);
}

namespace {

std::string directoryOf(const std::string& path) {
  const std::string directory = std::filesystem::path(path).parent_path();
  return directory.empty() ? "." : directory;
}

}  // namespace

Result<void> refuseFileWritableByOthers(const std::string& path, const std::string& what) {
  VRI_TRY(refuseWritableByOthers(path, what));
  return refuseWritableByOthers(directoryOf(path), what + "'s directory");
}

Result<void> refuseDirectoryOfWritableByOthers(const std::string& path, const std::string& what) {
  const std::string directory = directoryOf(path);
  if (std::error_code ec; !std::filesystem::exists(directory, ec)) return {};
  return refuseWritableByOthers(directory, what);
}

namespace {

enum class Readers { kAnyone, kNotEveryone };

Result<std::string> readFileOwnedByRoot(const std::string& path, const std::string& what, size_t maxBytes,
                                        Readers readers) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the file is then refused for what it is.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return Error::fromErrno(errno, what + ": open " + path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Error::fromErrno(errno, what + ": stat " + path);
  // What is checked is what is read: the open file, wherever a symbolic link led.
  if (!S_ISREG(st.st_mode)) return Error::invalidArgument(what + ": " + path + " is " + fileKind(st.st_mode));
  VRI_TRY(refuseWritableByOthers(st, path, what));
  if (readers == Readers::kNotEveryone && (st.st_mode & S_IROTH) != 0)
    return Error::failedPrecondition(what + ": " + path + " may be read by everyone (mode " + modeText(st.st_mode) +
                                     "); it is a secret: take that away (chmod o-r)");
  VRI_TRY(vri::refuseWritableByOthers(directoryOf(path), what + "'s directory"));
  const std::string tooLarge =
      what + ": " + path + " is larger than the " + std::to_string(maxBytes) + " bytes accepted";
  if (static_cast<uint64_t>(st.st_size) > maxBytes) return Error::invalidArgument(tooLarge);
  std::string content;
  char buffer[8192];
  while (content.size() <= maxBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Error::fromErrno(errno, what + ": read " + path);
    }
    if (n == 0) return content;
    content.append(buffer, static_cast<size_t>(n));
  }
  return Error::invalidArgument(tooLarge);  // grew while being read
}

}  // namespace

Result<std::string> readOwnedFile(const std::string& path, const std::string& what, size_t maxBytes) {
  return readFileOwnedByRoot(path, what, maxBytes, Readers::kAnyone);
}

Result<std::string> readOwnedSecretFile(const std::string& path, const std::string& what, size_t maxBytes) {
  return readFileOwnedByRoot(path, what, maxBytes, Readers::kNotEveryone);
}

}  // namespace vri
