// Calls the shim makes on a caller's behalf, from its own threads: one request
// and one reply as raw bytes through a generic stub, with the caller's
// deadline, cancellation and metadata carried upstream.
#pragma once

#include <google/protobuf/message_lite.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include "proto/grpc_bytes.h"

#include <memory>
#include <string>
#include <string_view>

namespace vri {

// A metadata key gRPC sets itself: never copied either way.
bool isReservedMetadataKey(std::string_view key);

// A context for an upstream call made for `caller`: its deadline and its
// metadata (less the reserved keys). `linked`: gRPC also carries the caller's
// cancellation, which ties the upstream call to the caller's, so it must be
// destroyed before the caller's call finishes (a blocking call on a worker).
// A call that may outlive that (the pass-through) carries cancellation itself.
std::unique_ptr<grpc::ClientContext> upstreamContext(grpc::GenericCallbackServerContext& caller, bool linked = true);

// Blocks the calling thread (never a gRPC reaction) until the upstream answers.
grpc::Status callUpstream(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
                          const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);
// The same with messages; a reply that does not parse is INTERNAL.
grpc::Status callUpstream(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
                          const google::protobuf::MessageLite& request, google::protobuf::MessageLite* reply);

}  // namespace vri
