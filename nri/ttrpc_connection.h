// TtrpcConnection: one NRI socket, as NRI's plugin side speaks it. Over the multiplexer it serves
// the plugin's service on logical connection 1 (the runtime's requests go to `handler`, one at a
// time, on a thread of its own, so that a handler may call the runtime meanwhile) and calls the
// runtime's service on connection 2 (call(): ttRPC's odd client stream ids, a deadline each).
//
// Bytes that are neither multiplexer frames nor ttRPC messages, a request that does not parse, or
// a response nobody asked for close the connection with a log line; so does the peer going away.
// A closed connection answers every call UNAVAILABLE and runs no handler again.
//
// What the runtime may queue is bounded: past kMaxQueuedRequests requests or kMaxQueuedBytes of
// them waiting for the handler, the next is answered RESOURCE_EXHAUSTED at once by the reader
// (which keeps reading, so that the runtime's replies to the plugin's own calls still arrive).
//
// `idle` runs on the handler's thread whenever no request waits: work the handler's state owns that
// can be done in small steps between requests (a step each time; it says whether more remains).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/thread_annotations.h"
#include "nri/wire_frames.h"

namespace vri::nri {

class TtrpcConnection {
 public:
  // A request of the runtime's: its service ("nri.pkg.api.v1alpha1.Plugin"), method, payload and
  // the time the runtime gives it, counted from when it was read (it may have waited in the queue
  // behind others); the reply's payload, or the error the runtime gets as the call's status.
  struct RequestTime {
    std::chrono::nanoseconds timeout{0};             // ttRPC's timeout; zero when the runtime sets none
    std::chrono::steady_clock::time_point received;  // when it was read: its time runs from then
  };
  using Handler = std::function<Result<std::string>(const std::string& service, const std::string& method,
                                                    const std::string& payload, const RequestTime& time)>;
  static constexpr size_t kMaxQueuedRequests = 256;
  static constexpr size_t kMaxQueuedBytes = 32 << 20;
  using Log = std::function<void(const std::string&)>;
  // One short step of deferred work; true while more remains.
  using Idle = std::function<bool()>;

  // Takes `fd`, a connected stream socket, and closes it when destroyed. `log` runs under the
  // connection's lock (a closed connection is logged before anyone sees it closed): it must not
  // call back into the connection.
  TtrpcConnection(int fd, Handler handler, Log log, Idle idle = {});
  ~TtrpcConnection();
  TtrpcConnection(const TtrpcConnection&) = delete;
  TtrpcConnection& operator=(const TtrpcConnection&) = delete;

  // A call of the runtime's service; its reply's payload, or the runtime's status as an error
  // (UNAVAILABLE once the connection is closed, DEADLINE_EXCEEDED past `timeout`).
  Result<std::string> call(const std::string& service, const std::string& method, const std::string& request,
                           std::chrono::milliseconds timeout);

  // Closes the connection (idempotent); `why` is logged once, with the first reason.
  void close(const std::string& why);
  bool closed() const;
  // Closes it and waits until the handler's thread is done: no handler or idle step runs after.
  // Once, and never from that thread.
  void finish(const std::string& why);
  // The runtime's requests read and waiting for the handler (not the one it is answering).
  size_t queuedRequests() const;
  // Waits until the connection is closed, by either side; false when `timeout` passed first.
  bool waitClosed(std::chrono::milliseconds timeout);

 private:
  struct Pending {
    bool done = false;
    Result<std::string> reply = Error(ErrorCode::kUnavailable, "no reply yet");
  };

  void readLoop();
  void serveLoop();
  // Frames of one logical connection's bytes, written whole under writeMutex_.
  Result<void> send(uint32_t conn, const TtrpcMessage& message);
  void onRuntimeMessage(const TtrpcMessage& message);
  struct Queued {
    TtrpcMessage message;
    std::chrono::steady_clock::time_point received;
  };
  void answer(const Queued& request);
  void reply(uint32_t stream, const Result<std::string>& result);

  const int fd_;
  const Handler handler_;
  const Log log_;
  const Idle idle_;
  Mutex writeMutex_;  // one writer at a time on the socket
  mutable Mutex mutex_;
  std::condition_variable_any changed_;
  bool closed_ VRI_GUARDED_BY(mutex_) = false;
  uint32_t nextStream_ VRI_GUARDED_BY(mutex_) = 1;
  std::map<uint32_t, Pending> pending_ VRI_GUARDED_BY(mutex_);  // by stream id
  std::deque<Queued> requests_ VRI_GUARDED_BY(mutex_);          // the runtime's, to serve in order
  size_t queuedBytes_ VRI_GUARDED_BY(mutex_) = 0;
  std::thread reader_;
  std::thread server_;
};

}  // namespace vri::nri
