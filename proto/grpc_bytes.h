// A protobuf message as the raw bytes of a gRPC call, and back: for the
// services and proxies that read requests themselves (vrid's raw methods, the
// CRI shim's pass-through).
#pragma once

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>

#include <string>

namespace vri {

grpc::ByteBuffer toBytes(const google::protobuf::MessageLite& message);
// The buffer's bytes, joined.
std::string bytesText(const grpc::ByteBuffer& buffer);
// False when the bytes are not `message`'s type.
bool fromBytes(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message);

}  // namespace vri
