#include "libvirt-bridge/hook_socket_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vri {

namespace {

using Clock = std::chrono::steady_clock;

class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or `deadline` passes; false on the deadline.
Result<bool> waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return Error::fromErrno(errno, "poll");
  }
}

}  // namespace

Result<HookAnswerFields> askVridHook(const std::string& socket, std::string_view frame,
                                     std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string where = "unix:" + socket;
  const auto late = [&] {
    return Error(ErrorCode::kDeadlineExceeded,
                 "no answer from " + where + " within " + std::to_string(timeout.count()) + " ms");
  };
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.size() >= sizeof address.sun_path) return Error::invalidArgument(where + ": the path is too long");
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  const Connection connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int fd = connection.fd();
  if (fd < 0) return Error::fromErrno(errno, "socket");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    // A unix socket's backlog is full: EAGAIN, and the connection is not made. Anything else: nobody there.
    if (errno == EAGAIN) return Error(ErrorCode::kUnavailable, where + " accepts no more connections now");
    return Error(ErrorCode::kUnavailable, "connect to " + where + ": " + std::strerror(errno));
  }
  for (size_t sent = 0; sent < frame.size();) {
    const ssize_t n = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      VRI_ASSIGN_OR_RETURN(const bool ready, waitFor(fd, POLLOUT, deadline));
      if (!ready) return late();
      continue;
    }
    return Error(ErrorCode::kUnavailable, "send to " + where + ": " + std::strerror(errno));
  }
  // The answer: its size, then the message.
  std::string received;
  size_t want = kHookFrameHeaderBytes;
  bool header = true;
  char buffer[65536];
  while (received.size() < want) {
    const ssize_t n = ::recv(fd, buffer, std::min(sizeof buffer, want - received.size()), 0);
    if (n > 0) {
      received.append(buffer, static_cast<size_t>(n));
      if (header && received.size() == kHookFrameHeaderBytes) {
        const uint32_t size = hookFrameSize(received);
        if (size > kMaxHookMessageBytes) {
          return Error(ErrorCode::kUnavailable, where +
                                                    " answered with something that is not a hook answer (is it vrid's "
                                                    "hook_socket?)");
        }
        header = false;
        received.clear();
        want = size;
      }
      continue;
    }
    if (n == 0) {
      return Error(ErrorCode::kUnavailable,
                   where + " closed the connection without an answer (is it vrid's hook_socket?)");
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Error(ErrorCode::kUnavailable, "receive from " + where + ": " + std::strerror(errno));
    VRI_ASSIGN_OR_RETURN(const bool ready, waitFor(fd, POLLIN, deadline));
    if (!ready) return late();
  }
  auto answer = decodeHookAnswer(received);
  if (!answer.ok())
    return Error(ErrorCode::kUnavailable, where + ": " + answer.error().message() + " (is it vrid's hook_socket?)");
  return answer;
}

}  // namespace vri
