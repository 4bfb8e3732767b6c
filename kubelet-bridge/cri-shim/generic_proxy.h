// GenericProxy: forwards every gRPC call it receives to an upstream channel as
// raw bytes, whatever its method (ones this code has never heard of included)
// and whatever its arity: each call is handled as bidirectional streaming, with
// one read and one write outstanding per side, half-close forwarded, metadata
// copied both ways (less the keys gRPC sets itself), deadline and cancellation
// carried upstream, and the upstream's status, details and trailers returned
// as they came. Nothing here blocks: every reaction starts the next operation
// and returns.
//
// Unary methods named in `handlers` are not passed through: the handler gets
// the request's bytes on one of `workers`' threads (where it may block on its
// own calls upstream) and answers with the reply's bytes or a status.
//
// A request message larger than `maxRequestBytes` is refused (RESOURCE_EXHAUSTED)
// before a handler parses it or the upstream sees it, whatever receive limit the
// server it is registered on has (the shim's has the same, and gRPC refuses first).
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>

#include "base/worker_pool.h"
#include "kubelet-bridge/calls_in_flight.h"

namespace vri {

using UnaryHandler = std::function<grpc::Status(grpc::GenericCallbackServerContext& context,
                                                const grpc::ByteBuffer& request, grpc::ByteBuffer* reply)>;

class GenericProxy : public grpc::CallbackGenericService {
 public:
  // `workers` (not owned) must outlive the server when `handlers` is not empty.
  explicit GenericProxy(std::shared_ptr<grpc::Channel> upstream, std::map<std::string, UnaryHandler> handlers = {},
                        WorkerPool* workers = nullptr, size_t maxRequestBytes = std::numeric_limits<size_t>::max());

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

  // Handled calls not finished yet: what a stop waits for before it cancels
  // the rest (passed-through calls are the runtime's, and kubelet retries them),
  // and what the pool follower gives way to.
  const CallsInFlight& handledCalls() const { return handledInFlight_; }
  int handledCallsInFlight() const { return handledInFlight_.count(); }

 private:
  grpc::GenericStub stub_;  // holds the upstream channel
  const std::map<std::string, UnaryHandler> handlers_;
  WorkerPool* workers_;
  const size_t maxRequestBytes_;
  CallsInFlight handledInFlight_;
};

}  // namespace vri
