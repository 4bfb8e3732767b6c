#include "proto/grpc_bytes.h"

#include <vector>

namespace vri {

grpc::ByteBuffer toBytes(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

std::string bytesText(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

bool fromBytes(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite& message) {
  return message.ParseFromString(bytesText(buffer));
}

}  // namespace vri
