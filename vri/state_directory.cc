#include "vri/state_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string_view>

#include "base/quote.h"

namespace vri {

namespace {

constexpr char kLockName[] = "vrid.lock";
constexpr char kLedgerName[] = "ledger.sqlite";
constexpr char kLedgerBegun[] = "ledger begun\n";

// vrid's own files: the lock, the ledger with sqlite's companions, ledgers set aside by --init-ledger.
bool isVriFile(const std::string& name) {
  return name == kLockName || name == kLedgerName || name == std::string(kLedgerName) + "-wal" ||
         name == std::string(kLedgerName) + "-shm" || name == std::string(kLedgerName) + "-journal" ||
         name.starts_with(std::string(kLedgerName) + ".damaged-");
}

}  // namespace

Result<StateDirectory> StateDirectory::claim(const std::string& path) {
  if (!path.starts_with("/"))
    return Error::invalidArgument("state_dir: not an absolute path: " + quoteForMessage(path));
  bool created = false, ledger_files = false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return Error::fromErrno(errno, "state_dir: stat " + path);
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return Error::fromErrno(ec.value(), "state_dir: creating " + path);
    if (::chmod(path.c_str(), 0700) != 0) return Error::fromErrno(errno, "state_dir: chmod 0700 " + path);
    created = true;
  } else {
    const std::string refuse = "state_dir: " + path + " is not a directory of VRI's own: ";
    if (!S_ISDIR(st.st_mode)) return Error::failedPrecondition(refuse + "not a directory");
    if (st.st_uid != ::geteuid())
      return Error::failedPrecondition(refuse + "it belongs to uid " + std::to_string(st.st_uid));
    if ((st.st_mode & 022) != 0) return Error::failedPrecondition(refuse + "others may write to it");
    // VRI's when it holds VRI's lock or ledger (an operator's copies beside them are theirs to keep);
    // otherwise it must be empty.
    std::error_code ec;
    std::string foreign;
    bool kept_something = false;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename();
      if (!isVriFile(name) && foreign.empty()) foreign = name;
      kept_something = kept_something || name == kLockName || name == kLedgerName;
      ledger_files = ledger_files || (isVriFile(name) && name != kLockName);
    }
    if (ec) return Error::fromErrno(ec.value(), "state_dir: listing " + path);
    if (!kept_something && !foreign.empty())
      return Error::failedPrecondition(refuse + "it holds " + quoteForMessage(foreign) +
                                       " and no VRI ledger; give vrid a directory of its own");
  }
  const std::string lock = path + "/" + kLockName;
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::fromErrno(errno, "state_dir: opening " + lock);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Error::failedPrecondition("another vrid is running on the state directory " + path);
  }
  // A start is the first until a ledger has been begun here, which the lock file records: a first
  // start that failed (or was killed) after claiming the directory leaves only an empty lock, and
  // is still a first start; a lock that records a ledger beside no ledger is a ledger lost.
  char mark[sizeof kLedgerBegun] = {};
  const ssize_t n = ::pread(fd, mark, sizeof mark - 1, 0);
  const bool begun = n > 0 && std::string_view(mark, static_cast<size_t>(n)) == std::string_view(kLedgerBegun);
  return StateDirectory(fd, created || (!begun && !ledger_files), begun);
}

Result<void> StateDirectory::recordLedgerBegun() {
  if (ledgerRecorded_) return {};
  const std::string_view mark(kLedgerBegun);
  if (::pwrite(lockFd_, mark.data(), mark.size(), 0) != static_cast<ssize_t>(mark.size()) ||
      ::ftruncate(lockFd_, static_cast<off_t>(mark.size())) != 0 || ::fsync(lockFd_) != 0) {
    return Error::fromErrno(errno, "state_dir: recording in vrid.lock that a ledger was begun");
  }
  ledgerRecorded_ = true;
  return {};
}

StateDirectory::StateDirectory(StateDirectory&& other) noexcept
    : lockFd_(other.lockFd_), firstStart_(other.firstStart_), ledgerRecorded_(other.ledgerRecorded_) {
  other.lockFd_ = -1;
}

StateDirectory::~StateDirectory() {
  if (lockFd_ >= 0) ::close(lockFd_);  // releases the directory
}

}  // namespace vri
