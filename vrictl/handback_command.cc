#include "vrictl/handback_command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace vri::ctl {

namespace {

// Written whole or not at all: a kubelet that finds half a file refuses to start.
Result<void> replaceFile(const std::string& path, const std::string& text) {
  const std::string partial = path + ".vri-partial";
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return Error::fromErrno(errno, "create " + partial);
  (void)::fchmod(fd, 0644);  // kubelet's mode, whatever the umask
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(partial.c_str());
      return Error::fromErrno(err, "write " + partial);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(partial.c_str());
    return Error::fromErrno(err, "sync " + partial);
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(partial.c_str());
    return Error::fromErrno(err, "rename " + partial + " to " + path);
  }
  return {};
}

std::optional<std::string> contentsOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// kubelet's files as they were before a hand-back wrote them, to put back when vrid refuses it.
struct Saved {
  std::string path;
  std::optional<std::string> before;  // nullopt: there was none
};

Result<void> putBack(const std::vector<Saved>& saved) {
  std::string failures;
  for (const Saved& file : saved) {
    const Result<void> restored = file.before ? replaceFile(file.path, *file.before)
                                  : ::unlink(file.path.c_str()) == 0 || errno == ENOENT
                                      ? Result<void>()
                                      : Result<void>(Error::fromErrno(errno, "remove " + file.path));
    if (!restored.ok()) failures += (failures.empty() ? "" : "; ") + restored.error().message();
  }
  if (failures.empty()) return {};
  return Error::internal(failures);
}

}  // namespace

Result<v1::HandBackReply> handBackToKubelet(VridApi& vrid, const HandBackChoices& choices) {
  v1::HandBackRequest request;
  request.set_kubelet_root_dir(choices.kubeletRootDir);
  request.set_kubelet_config(choices.kubeletConfig);
  request.set_dry_run(true);
  // A decision between composing and handing back (a VM's, with kubelet stopped) composes again.
  for (int attempt = 1;; ++attempt) {
    VRI_ASSIGN_OR_RETURN(v1::HandBackReply composed, vrid.handBack(request));
    if (choices.dryRun) return composed;
    std::vector<Saved> saved;
    for (const auto& [path, text] : {std::pair{composed.checkpoint_path(), composed.checkpoint()},
                                     {composed.memory_checkpoint_path(), composed.memory_checkpoint()}}) {
      if (path.empty()) continue;
      saved.push_back({path, contentsOf(path)});
      const Result<void> written = replaceFile(path, text);
      if (!written.ok()) {
        saved.pop_back();
        const Result<void> restored = putBack(saved);
        if (restored.ok()) return written.error();
        return Error(written.error().code(), written.error().message() + "; and " + restored.error().message());
      }
    }
    v1::HandBackRequest commit = request;
    commit.set_dry_run(false);
    commit.set_checkpoint(composed.checkpoint());
    commit.set_memory_checkpoint(composed.memory_checkpoint());
    Result<v1::HandBackReply> handed = vrid.handBack(commit);
    if (handed.ok()) return handed;
    // vrid keeps the node: kubelet's files are put back as they were.
    const Result<void> restored = putBack(saved);
    if (!restored.ok())
      return Error(handed.error().code(),
                   handed.error().message() +
                       "; and kubelet's files could not be put back as they were: " + restored.error().message());
    if (handed.error().code() != ErrorCode::kAborted || attempt == 3) return handed;
  }
}

}  // namespace vri::ctl
