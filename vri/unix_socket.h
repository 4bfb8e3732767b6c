// The filesystem side of vrid's unix sockets: a clean path before binding,
// the access mode and group after.
#pragma once

#include <sys/types.h>
#include <string>

#include "cgroup-model/result.h"

namespace vri {

// Creates the parent directory (0755) if needed and removes a stale socket
// left by a crash; refuses when another process still listens on it, or when
// the path holds something that is not a socket.
Result<void> prepareSocketPath(const std::string& path);

// chmod to `mode`, and chgrp to `group` when it is not empty.
Result<void> setSocketAccess(const std::string& path, mode_t mode, const std::string& group);

// Whether something accepts connections on the socket.
bool socketAcceptsConnections(const std::string& path);

}  // namespace vri
