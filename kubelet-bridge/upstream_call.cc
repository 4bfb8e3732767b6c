#include "kubelet-bridge/upstream_call.h"

#include <future>

namespace vri {

bool isReservedMetadataKey(std::string_view key) {
  return key.starts_with("grpc-") || key.starts_with(":") || key == "content-type" || key == "te" ||
         key == "user-agent" || key == "host";
}

std::unique_ptr<grpc::ClientContext> upstreamContext(grpc::GenericCallbackServerContext& caller, bool linked) {
  std::unique_ptr<grpc::ClientContext> context;
  if (linked) {
    context = grpc::ClientContext::FromCallbackServerContext(caller);
  } else {
    context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(caller.deadline());
  }
  for (const auto& [key, value] : caller.client_metadata()) {
    const std::string name(key.data(), key.size());
    if (!isReservedMetadataKey(name)) context->AddMetadata(name, std::string(value.data(), value.size()));
  }
  return context;
}

grpc::Status callUpstream(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
                          const grpc::ByteBuffer& request, grpc::ByteBuffer* reply) {
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, reply,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

grpc::Status callUpstream(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
                          const google::protobuf::MessageLite& request, google::protobuf::MessageLite* reply) {
  grpc::ByteBuffer out;
  grpc::Status status = callUpstream(stub, context, method, toBytes(request), &out);
  if (status.ok() && !fromBytes(out, *reply))
    return grpc::Status(grpc::StatusCode::INTERNAL, "vri-cri-shim: the answer to " + method + " does not parse");
  return status;
}

}  // namespace vri
