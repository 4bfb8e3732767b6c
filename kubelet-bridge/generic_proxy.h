// GenericProxy: forwards every gRPC call it receives to an upstream channel as
// raw bytes, whatever its method (ones this code has never heard of included)
// and whatever its arity: each call is handled as bidirectional streaming, with
// one read and one write outstanding per side, half-close forwarded, metadata
// copied both ways (less the keys gRPC sets itself), deadline and cancellation
// carried upstream, and the upstream's status, details and trailers returned
// as they came. Nothing here blocks: every reaction starts the next operation
// and returns.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include <memory>

namespace vri {

class GenericProxy : public grpc::CallbackGenericService {
 public:
  explicit GenericProxy(std::shared_ptr<grpc::Channel> upstream);

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

 private:
  grpc::GenericStub stub_;  // holds the upstream channel
};

}  // namespace vri
