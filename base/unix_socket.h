// The filesystem side of the unix sockets vrid and the shim serve on: a claim
// on the path before anything else, a clean path before binding, the access
// mode and group after, and removal of only what this process created.
#pragma once

#include <sys/types.h>
#include <memory>
#include <string>

#include "base/result.h"

namespace vri {

// Creates the parent directory (0755) if needed and removes a stale socket
// left by a crash; refuses when another process still listens on it, or when
// the path holds something that is not a socket.
Result<void> prepareSocketPath(const std::string& path);

// A socket path this process serves on. Taken with a lock file beside it
// (`<path>.lock`, flock) before the process touches anything else, so that a
// second vrid or shim on the same path stops before it could do harm. The
// socket is removed at the end only when this process created it and it is
// still the same file: never another process's socket, never a file that was
// there before.
class SocketClaim {
 public:
  // Claims `path` and prepares it (prepareSocketPath); refused when another
  // process holds the claim.
  static Result<std::unique_ptr<SocketClaim>> take(const std::string& path);
  ~SocketClaim();
  SocketClaim(const SocketClaim&) = delete;
  SocketClaim& operator=(const SocketClaim&) = delete;

  // The server has bound the path: it is this process's socket from now on.
  Result<void> bound();
  const std::string& path() const { return path_; }

 private:
  SocketClaim(std::string path, int lockFd) : path_(std::move(path)), lockFd_(lockFd) {}
  std::string path_;
  int lockFd_;
  bool created_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

// The id of the group named `group`; INVALID_ARGUMENT when there is none.
Result<gid_t> groupId(const std::string& group);

// chmod to `mode`, and chgrp to `group` when it is not empty.
Result<void> setSocketAccess(const std::string& path, mode_t mode, const std::string& group);

// Whether something accepts connections on the socket.
bool socketAcceptsConnections(const std::string& path);

}  // namespace vri
