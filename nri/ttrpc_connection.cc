#include "nri/ttrpc_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "base/rpc_code.h"
#include "nri/ttrpc.pb.h"

namespace vri::nri {

TtrpcConnection::TtrpcConnection(int fd, Handler handler, Log log, Idle idle)
    : fd_(fd), handler_(std::move(handler)), log_(std::move(log)), idle_(std::move(idle)) {
  reader_ = std::thread([this] { readLoop(); });
  server_ = std::thread([this] { serveLoop(); });
}

TtrpcConnection::~TtrpcConnection() {
  close("closed by this side");
  reader_.join();
  if (server_.joinable()) server_.join();
  ::close(fd_);
}

void TtrpcConnection::finish(const std::string& why) {
  close(why);
  if (server_.joinable()) server_.join();
}

void TtrpcConnection::close(const std::string& why) {
  {
    MutexLock lock(mutex_);
    if (closed_) return;
    closed_ = true;
    log_("NRI connection closed: " + why);  // before anyone sees it closed
    for (auto& [stream, call] : pending_) {
      call.done = true;
      call.reply = Error(ErrorCode::kUnavailable, "NRI connection closed: " + why);
    }
  }
  // Wakes the reader (its read returns 0) and fails a writer stuck on a full socket.
  ::shutdown(fd_, SHUT_RDWR);
  changed_.notify_all();
}

bool TtrpcConnection::closed() const {
  MutexLock lock(mutex_);
  return closed_;
}

size_t TtrpcConnection::queuedRequests() const {
  MutexLock lock(mutex_);
  return requests_.size();
}

bool TtrpcConnection::waitClosed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  while (!closed_) {
    if (lock.waitUntil(changed_, deadline) == std::cv_status::timeout) return closed_;
  }
  return true;
}

Result<void> TtrpcConnection::send(uint32_t conn, const TtrpcMessage& message) {
  VRI_ASSIGN_OR_RETURN(const std::string bytes, encodeTtrpc(message));
  const std::string frames = encodeMuxFrames(conn, bytes);
  MutexLock lock(writeMutex_);
  size_t written = 0;
  while (written < frames.size()) {
    const ssize_t n = ::send(fd_, frames.data() + written, frames.size() - written, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::fromErrno(n < 0 ? errno : EPIPE, "write to the NRI socket");
    written += static_cast<size_t>(n);
  }
  return {};
}

Result<std::string> TtrpcConnection::call(const std::string& service, const std::string& method,
                                          const std::string& request, std::chrono::milliseconds timeout) {
  ttrpc::Request envelope;
  envelope.set_service(service);
  envelope.set_method(method);
  envelope.set_payload(request);
  envelope.set_timeout_nano(std::chrono::nanoseconds(timeout).count());
  uint32_t stream = 0;
  {
    MutexLock lock(mutex_);
    if (closed_) return Error(ErrorCode::kUnavailable, "NRI connection closed");
    stream = nextStream_;
    nextStream_ += 2;  // a ttRPC client's streams are odd
    pending_[stream];
  }
  if (Result<void> sent = send(kRuntimeServiceConn, {stream, TtrpcType::kRequest, 0, envelope.SerializeAsString()});
      !sent.ok()) {
    close(sent.error().message());
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  Pending& pending = pending_[stream];
  while (!pending.done) {
    if (lock.waitUntil(changed_, deadline) == std::cv_status::timeout && !pending.done) {
      pending_.erase(stream);  // a late reply for it is dropped
      return Error(ErrorCode::kDeadlineExceeded,
                   service + "/" + method + ": no reply within " + std::to_string(timeout.count()) + " ms");
    }
  }
  Result<std::string> reply = std::move(pending.reply);
  pending_.erase(stream);
  return reply;
}

void TtrpcConnection::readLoop() {
  MuxReader mux;
  TtrpcReader fromRuntime, forPlugin;  // conn 1 carries the runtime's requests, conn 2 its replies
  std::string buffer(64 * 1024, '\0');
  while (true) {
    const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(n == 0 ? "the runtime closed it" : std::string("read: ") + std::strerror(errno));
      return;
    }
    auto frames = mux.feed(std::string_view(buffer.data(), static_cast<size_t>(n)));
    if (!frames.ok()) {
      close(frames.error().message());
      return;
    }
    for (const MuxFrame& frame : *frames) {
      if (frame.conn != kPluginServiceConn && frame.conn != kRuntimeServiceConn) continue;  // as NRI does
      TtrpcReader& reader = frame.conn == kPluginServiceConn ? fromRuntime : forPlugin;
      auto messages = reader.feed(frame.payload);
      if (!messages.ok()) {
        close(messages.error().message());
        return;
      }
      for (TtrpcMessage& message : *messages) {
        if (frame.conn == kRuntimeServiceConn) {
          onRuntimeMessage(message);
          continue;
        }
        if (message.type != TtrpcType::kRequest) {
          close("ttRPC: a message of type " + std::to_string(static_cast<int>(message.type)) +
                " for the plugin's service, which takes requests only");
          return;
        }
        bool queued = false;
        const uint32_t stream = message.streamId;
        {
          MutexLock lock(mutex_);
          if (requests_.size() < kMaxQueuedRequests && queuedBytes_ + message.payload.size() <= kMaxQueuedBytes) {
            queuedBytes_ += message.payload.size();
            requests_.push_back(Queued{std::move(message), std::chrono::steady_clock::now()});
            queued = true;
          }
        }
        if (queued) {
          changed_.notify_all();
        } else {
          reply(stream, Error(ErrorCode::kResourceExhausted,
                              "vri-nri-plugin has " + std::to_string(kMaxQueuedRequests) + " requests (or " +
                                  std::to_string(kMaxQueuedBytes >> 20) +
                                  " MiB of them) waiting already; this one is refused, not queued"));
        }
      }
      if (closed()) return;
    }
  }
}

void TtrpcConnection::onRuntimeMessage(const TtrpcMessage& message) {
  if (message.type != TtrpcType::kResponse) {
    close("ttRPC: a message of type " + std::to_string(static_cast<int>(message.type)) +
          " from the runtime's service, which sends responses only");
    return;
  }
  ttrpc::Response response;
  if (!response.ParseFromString(message.payload)) {
    close("ttRPC: a response on stream " + std::to_string(message.streamId) + " that does not parse");
    return;
  }
  {
    MutexLock lock(mutex_);
    const auto found = pending_.find(message.streamId);
    if (found == pending_.end()) {
      // Its caller gave up (deadline) or nobody asked: NRI's own client drops such replies too.
      return;
    }
    found->second.done = true;
    if (response.status().code() == 0) {
      found->second.reply = response.payload();
    } else {
      found->second.reply = fromRpcCode(response.status().code(), response.status().message());
    }
  }
  changed_.notify_all();
}

void TtrpcConnection::serveLoop() {
  bool idleWork = static_cast<bool>(idle_);  // asked after each request, until it has none
  while (true) {
    std::optional<Queued> request;
    {
      MutexLock lock(mutex_);
      while (!closed_ && requests_.empty() && !idleWork) lock.wait(changed_);
      if (closed_) return;
      if (!requests_.empty()) {
        request = std::move(requests_.front());
        requests_.pop_front();
        queuedBytes_ -= request->message.payload.size();
      }
    }
    if (!request) {
      idleWork = idle_();
      continue;
    }
    answer(*request);
    idleWork = static_cast<bool>(idle_);
  }
}

void TtrpcConnection::answer(const Queued& request) {
  ttrpc::Request envelope;
  if (!envelope.ParseFromString(request.message.payload)) {
    close("ttRPC: a request on stream " + std::to_string(request.message.streamId) + " that does not parse");
    return;
  }
  const RequestTime time{std::chrono::nanoseconds(std::max<int64_t>(envelope.timeout_nano(), 0)), request.received};
  reply(request.message.streamId, handler_(envelope.service(), envelope.method(), envelope.payload(), time));
}

void TtrpcConnection::reply(uint32_t stream, const Result<std::string>& result) {
  ttrpc::Response response;
  if (result.ok()) {
    response.set_payload(*result);
  } else {
    response.mutable_status()->set_code(toRpcCode(result.error().code()));
    response.mutable_status()->set_message(result.error().message());
  }
  if (Result<void> sent = send(kPluginServiceConn, {stream, TtrpcType::kResponse, 0, response.SerializeAsString()});
      !sent.ok()) {
    close(sent.error().message());
  }
}

}  // namespace vri::nri
