// The two framings on an NRI socket, as bytes: NRI's multiplexer (github.com/containerd/nri
// v0.11.0, pkg/net/multiplex), which carries several logical connections over the one socket, and
// ttRPC's messages (github.com/containerd/ttrpc v1.2.7, channel.go), which run inside each logical
// connection. Pure code: bytes in, frames or messages out, an error for bytes that cannot be either.
//
//   multiplexer frame:  conn id (4 bytes, big endian), payload length (4), payload
//   ttRPC message:      payload length (4, big endian), stream id (4), type (1), flags (1), payload
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace vri::nri {

// The multiplexer's logical connections: the plugin's service (the runtime calls it) and the
// runtime's (the plugin calls it). Id 0 is reserved.
inline constexpr uint32_t kPluginServiceConn = 1;
inline constexpr uint32_t kRuntimeServiceConn = 2;

inline constexpr size_t kMuxHeaderBytes = 8;
inline constexpr size_t kTtrpcHeaderBytes = 10;
inline constexpr uint32_t kTtrpcMaxMessageBytes = 4u << 20;
// The largest multiplexer payload NRI writes: one whole ttRPC message.
inline constexpr uint32_t kMuxMaxPayloadBytes = kTtrpcHeaderBytes + kTtrpcMaxMessageBytes;
// What this side writes per frame: Go's ttRPC reads a logical connection through a 4 KiB buffer,
// and NRI's multiplexer refuses a read into a buffer smaller than the frame.
inline constexpr size_t kMuxWriteFrameBytes = 4096;

struct MuxFrame {
  uint32_t conn = 0;
  std::string payload;
};

// `data` for logical connection `conn` as frames of at most kMuxWriteFrameBytes payload each.
std::string encodeMuxFrames(uint32_t conn, std::string_view data);

// Frames out of a byte stream that arrives in arbitrary pieces.
class MuxReader {
 public:
  // The frames `bytes` completes, in order; an error (and nothing more, ever) for a reserved
  // connection id or a length past kMuxMaxPayloadBytes.
  Result<std::vector<MuxFrame>> feed(std::string_view bytes);

 private:
  std::string pending_;
  bool broken_ = false;
};

enum class TtrpcType : uint8_t { kRequest = 1, kResponse = 2, kData = 3 };

// ttRPC's flags on data and streams; a unary call sends none.
inline constexpr uint8_t kTtrpcFlagRemoteClosed = 0x1;

struct TtrpcMessage {
  uint32_t streamId = 0;
  TtrpcType type = TtrpcType::kRequest;
  uint8_t flags = 0;
  std::string payload;
};

// Refused past kTtrpcMaxMessageBytes.
Result<std::string> encodeTtrpc(const TtrpcMessage& message);

// ttRPC messages out of one logical connection's bytes.
class TtrpcReader {
 public:
  // The messages `bytes` completes; an error (and nothing more, ever) for a length past
  // kTtrpcMaxMessageBytes, a type ttRPC does not have, or stream id 0.
  Result<std::vector<TtrpcMessage>> feed(std::string_view bytes);

 private:
  std::string pending_;
  bool broken_ = false;
};

}  // namespace vri::nri
