// Files and directories whose contents decide what VRI does (its configuration, the directories
// its sockets and ledger live in) must be changeable by root and VRI's own user only: anyone
// else who can write one can move placement, or put a socket of their own where VRI's clients
// look for VRI's.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"

namespace vri {

// Refuses (FAILED_PRECONDITION, naming `what`, the path and who else may write it) when `path`
// belongs to a user other than root and this process's user, or when its group (unless it is
// root's group) or everyone may write to it. Symbolic links are followed: what counts is the
// file that is read.
Result<void> refuseWritableByOthers(const std::string& path, const std::string& what);

// The same for a file and for the directory that holds it (whoever may write the directory may
// replace the file).
Result<void> refuseFileWritableByOthers(const std::string& path, const std::string& what);

// The same for the directory that holds `path`, when that directory exists (whoever may write it
// could put a file or socket of their own at `path`).
Result<void> refuseDirectoryOfWritableByOthers(const std::string& path, const std::string& what);

// Reads such a file whole: refused unless it is a regular file (a FIFO is not waited on, a device
// not read), of at most `maxBytes`, that no one but root and this user may change (the checks
// above, made on the file that was opened). Errors name `what` and the path.
Result<std::string> readOwnedFile(const std::string& path, const std::string& what, size_t maxBytes);

// The same for a secret (a bearer token): also refused when everyone may read it. Its group may,
// so that a scraper's group can be given it.
Result<std::string> readOwnedSecretFile(const std::string& path, const std::string& what, size_t maxBytes);

}  // namespace vri
