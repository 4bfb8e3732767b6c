// The runtime's end of an NRI socket, for the NRI module's tests: it writes multiplexer frames
// and ttRPC messages as containerd's NRI does (or any bytes a test wants), and reads what the
// plugin's side writes back, one message at a time, with a deadline.
#pragma once

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "nri/ttrpc.pb.h"
#include "nri/wire_frames.h"

namespace vri::testing {

class NriRuntimePeer {
 public:
  explicit NriRuntimePeer(int fd) : fd_(fd) {}
  ~NriRuntimePeer() { ::close(fd_); }

  bool writeRaw(const std::string& bytes) {
    return ::write(fd_, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  }
  // A ttRPC message on logical connection `conn`.
  bool write(uint32_t conn, const nri::TtrpcMessage& message) {
    return writeRaw(nri::encodeMuxFrames(conn, nri::encodeTtrpc(message).value()));
  }
  // The runtime calling the plugin's service (connection 1) on `stream`, giving it `timeout` as
  // containerd's NRI gives each request its plugin_request_timeout (zero: none).
  bool request(uint32_t stream, const std::string& service, const std::string& method, const std::string& payload,
               std::chrono::nanoseconds timeout = std::chrono::nanoseconds(0)) {
    ttrpc::Request request;
    request.set_service(service);
    request.set_method(method);
    request.set_payload(payload);
    request.set_timeout_nano(timeout.count());
    return write(nri::kPluginServiceConn, {stream, nri::TtrpcType::kRequest, 0, request.SerializeAsString()});
  }
  // The runtime answering the plugin's call on `stream` (connection 2).
  bool respond(uint32_t stream, const std::string& payload, int code = 0, const std::string& message = "") {
    ttrpc::Response response;
    response.set_payload(payload);
    response.mutable_status()->set_code(code);
    response.mutable_status()->set_message(message);
    return write(nri::kRuntimeServiceConn, {stream, nri::TtrpcType::kResponse, 0, response.SerializeAsString()});
  }

  struct Received {
    uint32_t conn = 0;
    nri::TtrpcMessage message;
  };
  // The next message the plugin's side wrote; nothing when none came in time or the socket closed.
  std::optional<Received> next(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (!queued_.empty()) {
        Received r = std::move(queued_.front());
        queued_.erase(queued_.begin());
        return r;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buffer[65536];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      auto frames = mux_.feed(std::string_view(buffer, static_cast<size_t>(n)));
      if (!frames.ok()) return std::nullopt;
      for (const nri::MuxFrame& frame : *frames) {
        auto messages = (frame.conn == nri::kPluginServiceConn ? plugin_ : runtime_).feed(frame.payload);
        if (!messages.ok()) return std::nullopt;
        for (auto& m : *messages) queued_.push_back({frame.conn, std::move(m)});
      }
    }
  }
  // True once the plugin's side has closed its end.
  bool closedByPlugin(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buffer[4096];
      if (::read(fd_, buffer, sizeof buffer) <= 0) return true;  // what it wrote before closing is dropped
    }
  }

 private:
  int fd_;
  nri::MuxReader mux_;
  nri::TtrpcReader plugin_, runtime_;
  std::vector<Received> queued_;
};

}  // namespace vri::testing
