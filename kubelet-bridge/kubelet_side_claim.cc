#include "kubelet-bridge/kubelet_side_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace vri {

namespace {

// What the holder wrote: "<program> <pid>".
std::string holderOf(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string holder = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  const size_t space = holder.rfind(' ');
  if (holder.empty() || space == std::string::npos) return "another process";
  return holder.substr(0, space) + " (pid " + holder.substr(space + 1) + ")";
}

}  // namespace

Result<std::unique_ptr<KubeletSideClaim>> KubeletSideClaim::take(const std::string& vridSocket,
                                                                 const std::string& program) {
  const std::string path = lockPath(vridSocket);
  // vrid's directory may not be there yet (it starts after us): made as vrid makes it.
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) {
    std::filesystem::create_directories(parent, ec);
    if (ec) return Error::fromErrno(ec.value(), "creating " + parent.string());
    ::chmod(parent.c_str(), 0755);
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::fromErrno(errno, "opening " + path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = holderOf(fd);
    ::close(fd);
    if (err != EWOULDBLOCK) return Error::fromErrno(err, "locking " + path);
    return Error::failedPrecondition(holder + " already places this node's pods for vrid at " + vridSocket +
                                     ": run vri-cri-shim or vri-nri-plugin, not both (the NRI plugin where the "
                                     "runtime has NRI, the CRI shim where it has not)");
  }
  const std::string holder = program + " " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
    const int err = errno;
    ::close(fd);
    return Error::fromErrno(err, "writing " + path);
  }
  return std::unique_ptr<KubeletSideClaim>(new KubeletSideClaim(fd));
}

KubeletSideClaim::~KubeletSideClaim() {
  ::close(fd_);  // the file stays: removing it would let two processes hold "the" lock at once
}

}  // namespace vri
