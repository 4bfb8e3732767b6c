#include "base/unix_socket.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "base/owned_path.h"
#include "base/quote.h"

namespace vri {

bool socketAcceptsConnections(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return false;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return connected;
}

Result<void> prepareSocketPath(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path)
    return Error::invalidArgument("socket path " + quoteForMessage(path) + " is too long for a unix socket");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return Error::fromErrno(ec.value(), "creating " + parent.string());
    ::chmod(parent.c_str(), 0755);
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {};
    return Error::fromErrno(errno, "stat " + path);
  }
  if (!S_ISSOCK(st.st_mode))
    return Error::failedPrecondition(quoteForMessage(path) + " exists and is not a socket; not removing it");
  if (socketAcceptsConnections(path))
    return Error::failedPrecondition("another process is serving on " + path + " (is vrid already running?)");
  if (::unlink(path.c_str()) != 0) return Error::fromErrno(errno, "removing the stale socket " + path);
  return {};
}

Result<std::unique_ptr<SocketClaim>> SocketClaim::take(const std::string& path) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path)
    return Error::invalidArgument("socket path " + quoteForMessage(path) + " is empty or too long for a unix socket");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return Error::fromErrno(ec.value(), "creating " + parent.string());
    ::chmod(parent.c_str(), 0755);  // made by this process: its mode is ours to set
  }
  // Whoever may write the directory could put a socket of their own where clients look for this one.
  VRI_TRY(refuseDirectoryOfWritableByOthers(path, "the directory of " + path));
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::fromErrno(errno, "opening " + lock_path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK)
      return Error::failedPrecondition("another process serves on " + path + " (it holds " + lock_path + ")");
    return Error::fromErrno(err, "locking " + lock_path);
  }
  std::unique_ptr<SocketClaim> claim(new SocketClaim(path, fd));
  VRI_TRY(prepareSocketPath(path));
  return claim;
}

Result<void> SocketClaim::bound() {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) return Error::fromErrno(errno, "stat " + path_);
  if (!S_ISSOCK(st.st_mode)) return Error::failedPrecondition(path_ + " is not a socket after binding");
  created_ = true;
  device_ = st.st_dev;
  inode_ = st.st_ino;
  return {};
}

SocketClaim::~SocketClaim() {
  struct stat st {};
  if (created_ && ::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_)
    ::unlink(path_.c_str());
  ::close(lockFd_);  // the lock file stays: removing it would let two processes hold "the" lock at once
}

Result<gid_t> groupId(const std::string& group) {
  std::vector<char> buffer(16384);
  struct group entry {};
  struct group* found = nullptr;
  const int err = ::getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (err != 0) return Error::fromErrno(err, "looking up group " + quoteForMessage(group));
  if (found == nullptr) return Error::invalidArgument("no group named " + quoteForMessage(group));
  return found->gr_gid;
}

Result<void> setSocketAccess(const std::string& path, mode_t mode, const std::string& group) {
  if (!group.empty()) {
    VRI_ASSIGN_OR_RETURN(const gid_t gid, groupId(group));
    if (::chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0)
      return Error::fromErrno(errno, "chgrp " + group + " " + path);
  }
  if (::chmod(path.c_str(), mode) != 0) return Error::fromErrno(errno, "chmod " + path);
  return {};
}

}  // namespace vri
