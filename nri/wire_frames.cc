#include "nri/wire_frames.h"

namespace vri::nri {

namespace {

uint32_t bigEndian32(std::string_view bytes) {
  return static_cast<uint32_t>(static_cast<uint8_t>(bytes[0])) << 24 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[1])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(bytes[2])) << 8 | static_cast<uint8_t>(bytes[3]);
}

void appendBigEndian32(std::string& out, uint32_t value) {
  out += static_cast<char>(value >> 24);
  out += static_cast<char>(value >> 16);
  out += static_cast<char>(value >> 8);
  out += static_cast<char>(value);
}

}  // namespace

std::string encodeMuxFrames(uint32_t conn, std::string_view data) {
  std::string out;
  out.reserve(data.size() + (data.size() / kMuxWriteFrameBytes + 1) * kMuxHeaderBytes);
  do {
    const std::string_view chunk = data.substr(0, kMuxWriteFrameBytes);
    appendBigEndian32(out, conn);
    appendBigEndian32(out, static_cast<uint32_t>(chunk.size()));
    out += chunk;
    data.remove_prefix(chunk.size());
  } while (!data.empty());
  return out;
}

Result<std::vector<MuxFrame>> MuxReader::feed(std::string_view bytes) {
  if (broken_) return Error::invalidArgument("NRI multiplexer: the stream broke before");
  pending_.append(bytes);
  std::vector<MuxFrame> frames;
  size_t at = 0;
  while (pending_.size() - at >= kMuxHeaderBytes) {
    const std::string_view header(pending_.data() + at, kMuxHeaderBytes);
    const uint32_t conn = bigEndian32(header);
    const uint32_t length = bigEndian32(header.substr(4));
    if (conn == 0 || length > kMuxMaxPayloadBytes) {
      broken_ = true;
      pending_.clear();
      return Error::invalidArgument(conn == 0 ? std::string("NRI multiplexer: a frame for the reserved connection 0")
                                              : "NRI multiplexer: a frame of " + std::to_string(length) +
                                                    " bytes, past the limit of " + std::to_string(kMuxMaxPayloadBytes));
    }
    if (pending_.size() - at - kMuxHeaderBytes < length) break;
    frames.push_back({conn, pending_.substr(at + kMuxHeaderBytes, length)});
    at += kMuxHeaderBytes + length;
  }
  pending_.erase(0, at);
  return frames;
}

Result<std::string> encodeTtrpc(const TtrpcMessage& message) {
  if (message.payload.size() > kTtrpcMaxMessageBytes) {
    return Error::resourceExhausted("ttRPC: a message of " + std::to_string(message.payload.size()) +
                                    " bytes, past the limit of " + std::to_string(kTtrpcMaxMessageBytes));
  }
  std::string out;
  out.reserve(kTtrpcHeaderBytes + message.payload.size());
  appendBigEndian32(out, static_cast<uint32_t>(message.payload.size()));
  appendBigEndian32(out, message.streamId);
  out += static_cast<char>(message.type);
  out += static_cast<char>(message.flags);
  out += message.payload;
  return out;
}

Result<std::vector<TtrpcMessage>> TtrpcReader::feed(std::string_view bytes) {
  if (broken_) return Error::invalidArgument("ttRPC: the stream broke before");
  pending_.append(bytes);
  std::vector<TtrpcMessage> messages;
  size_t at = 0;
  while (pending_.size() - at >= kTtrpcHeaderBytes) {
    const std::string_view header(pending_.data() + at, kTtrpcHeaderBytes);
    const uint32_t length = bigEndian32(header);
    const uint32_t stream = bigEndian32(header.substr(4));
    const auto type = static_cast<uint8_t>(header[8]);
    std::string problem;
    if (length > kTtrpcMaxMessageBytes) {
      problem = "a message of " + std::to_string(length) + " bytes, past the limit of " +
                std::to_string(kTtrpcMaxMessageBytes);
    } else if (type < 1 || type > 3) {
      problem = "a message of type " + std::to_string(type) + ", which ttRPC does not have";
    } else if (stream == 0) {
      problem = "a message on stream 0";
    }
    if (!problem.empty()) {
      broken_ = true;
      pending_.clear();
      return Error::invalidArgument("ttRPC: " + problem);
    }
    if (pending_.size() - at - kTtrpcHeaderBytes < length) break;
    messages.push_back({stream, static_cast<TtrpcType>(type), static_cast<uint8_t>(header[9]),
                        pending_.substr(at + kTtrpcHeaderBytes, length)});
    at += kTtrpcHeaderBytes + length;
  }
  pending_.erase(0, at);
  return messages;
}

}  // namespace vri::nri
