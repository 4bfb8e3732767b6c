#include "vri/hook_door.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/quote.h"
#include "base/unix_socket.h"
#include "libvirt-bridge/hook.h"
#include "libvirt-bridge/hook_wire.h"
#include "proto/hook_call.pb.h"

namespace vri {

namespace {

// The hook logic's vrid: the admin service's own decisions, for the hook's version.
class ServiceHookVrid final : public HookVrid {
 public:
  ServiceHookVrid(VriService& service, std::string agent) : service_(service), agent_(std::move(agent)) {}
  Result<v1::VmAllocation> admitVm(const v1::AdmitVmRequest& request) override {
    return service_.admitVmFor(agent_, request);
  }
  Result<v1::VmStartedReply> vmStarted(const v1::VmStartedRequest& request) override {
    return service_.vmStartedFor(agent_, request);
  }
  Result<void> releaseVm(const v1::ReleaseVmRequest& request) override {
    return service_.releaseVmFor(agent_, request);
  }
  // vrid is there: an unavailable answer is its own (see HookVrid).
  std::string unavailableMeans() const override { return "cannot decide now"; }

 private:
  VriService& service_;
  const std::string agent_;
};

// Reads exactly `size` bytes, within the socket's receive timeout.
Result<std::string> readExactly(int fd, size_t size) {
  std::string bytes(size, '\0');
  for (size_t got = 0; got < size;) {
    const ssize_t n = ::recv(fd, bytes.data() + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return Error::failedPrecondition("the caller closed the connection before its call was complete");
    } else if (errno != EINTR) {
      return Error::fromErrno(errno, "receive the call");
    }
  }
  return bytes;
}

Result<void> writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::fromErrno(errno, "send the answer");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

Result<hook::v1::HookCall> readCall(int fd) {
  VRI_ASSIGN_OR_RETURN(const std::string header, readExactly(fd, kHookFrameHeaderBytes));
  const uint32_t size = hookFrameSize(header);
  if (size > kMaxHookMessageBytes) {
    return Error::invalidArgument("a call of " + std::to_string(size) + " bytes; at most " +
                                  std::to_string(kMaxHookMessageBytes) + " are accepted");
  }
  VRI_ASSIGN_OR_RETURN(const std::string body, readExactly(fd, size));
  hook::v1::HookCall call;
  if (!call.ParseFromString(body)) return Error::invalidArgument("not a hook call (proto/hook_call.proto)");
  return call;
}

// hook.conf's settings that shape the answer, as the hook sent them.
Result<HookConfig> configOf(const hook::v1::HookCall& call, const std::string& socket) {
  HookConfig config;
  config.socket = socket;  // the messages name where vrid was asked
  config.whenUnreachable = call.refuse_when_unreachable() ? WhenUnreachable::kRefuse : WhenUnreachable::kStartShared;
  if (!call.qemu_pid_dir().empty()) {
    VRI_TRY(checkHookPath("qemu_pid_dir", call.qemu_pid_dir()));
    config.qemuPidDir = call.qemu_pid_dir();
  }
  return config;
}

std::string answerFrame(const HookOutcome& outcome) {
  hook::v1::HookAnswer answer;
  answer.set_exit_code(outcome.exitCode);
  answer.set_out(outcome.out);
  answer.set_err(outcome.err);
  const std::string body = answer.SerializeAsString();
  return hookFrameHeader(body.size()) + body;
}

}  // namespace

Result<std::unique_ptr<HookDoor>> HookDoor::open(const std::string& path, VriService& admin, Logger& log) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return Error::invalidArgument("hook_socket: " + path + " is too long");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::fromErrno(errno, "socket for " + path);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, kMaxConnections) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::fromErrno(err, "listen on " + path);
  }
  const int wake = ::eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    const int err = errno;
    ::close(fd);
    return Error::fromErrno(err, "eventfd");
  }
  std::unique_ptr<HookDoor> door(new HookDoor(path, fd, wake, admin, log));
  // vrid's umask (077) made the socket root's alone already; the mode says so whatever the umask.
  VRI_TRY(setSocketAccess(path, 0600, ""));
  return door;
}

HookDoor::HookDoor(std::string path, int listenFd, int wakeFd, VriService& admin, Logger& log)
    : path_(std::move(path)),
      listenFd_(listenFd),
      wakeFd_(wakeFd),
      admin_(admin),
      log_(log),
      serving_(std::make_unique<WorkerPool>(kServingThreads)),
      acceptor_([this] { acceptLoop(); }) {}

HookDoor::~HookDoor() {
  close();
  ::close(listenFd_);
  ::close(wakeFd_);
}

void HookDoor::close() {
  if (closed_) return;
  closed_ = true;
  const uint64_t one = 1;
  (void)!::write(wakeFd_, &one, sizeof one);
  acceptor_.join();
  serving_.reset();  // answers what was accepted, then joins
}

void HookDoor::acceptLoop() {
  for (;;) {
    // Past kMaxConnections, connections wait in the backlog until one is answered.
    const bool room = connections_.load() < kMaxConnections;
    pollfd fds[2] = {{wakeFd_, POLLIN, 0}, {listenFd_, static_cast<short>(room ? POLLIN : 0), 0}};
    const int n = ::poll(fds, 2, room ? -1 : 50);
    if (n < 0 && errno != EINTR) {
      log_.error("hook socket " + path_ + ": poll: " + std::strerror(errno) + "; no longer accepting");
      return;
    }
    if (fds[0].revents != 0) return;
    if (n <= 0 || (fds[1].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the caller went away, or a transient shortage: the next poll tries again
    const timeval timeout{kReadTimeout.count(), 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    ++connections_;
    serving_->post([this, fd] {
      serve(fd);
      ::close(fd);
      --connections_;
    });
  }
}

void HookDoor::serve(int fd) {
  const auto started = std::chrono::steady_clock::now();
  auto call = readCall(fd);
  if (!call.ok()) {
    log_.warning("hook socket: " + call.error().message());
    (void)writeAll(fd, answerFrame({1, "", "vri: vrid's hook socket: " + call.error().message() + "\n"}));
    return;
  }
  const std::vector<std::string> args(call->args().begin(), call->args().end());
  HookOutcome outcome;
  if (auto config = configOf(*call, path_); !config.ok()) {
    outcome = {1, "", "vri: " + config.error().message() + "\n"};
  } else {
    ServiceHookVrid vrid(admin_, call->client_version());
    outcome = runHook(*config, args, call->domain_xml(), vrid);
  }
  if (log_.enabled(LogLevel::kDebug)) {
    std::string what;
    for (const std::string& arg : args) what += (what.empty() ? "" : " ") + quoteForMessage(arg);
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    log_.debug("hook " + what + ": exit " + std::to_string(outcome.exitCode) + " (" + std::to_string(ms) + " ms)");
  }
  if (auto sent = writeAll(fd, answerFrame(outcome)); !sent.ok()) {
    log_.warning("hook socket: " + sent.error().message() + " (the hook gave up waiting)");
  }
}

}  // namespace vri
