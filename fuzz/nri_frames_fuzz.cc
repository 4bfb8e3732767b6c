// The bytes an NRI socket delivers: NRI's multiplexer frames and the ttRPC messages inside each
// logical connection, and the ttRPC request envelope of the runtime's calls. The leading byte picks
// the size of the pieces the bytes arrive in (1 to 256 bytes, as reads of a socket may cut them).
//
// What the readers promise: the same frames and messages whatever the pieces; every message within
// ttRPC's 4 MiB and of a type ttRPC has, and encoded again, the very bytes it was read from; after
// bytes that are refused, nothing more is ever read.
#include <map>

#include "fuzz/fuzz_input.h"
#include "nri/ttrpc.pb.h"
#include "nri/wire_frames.h"

using namespace vri;
using namespace vri::nri;

namespace {

struct Outcome {
  std::vector<MuxFrame> frames;
  std::vector<std::pair<uint32_t, TtrpcMessage>> messages;  // by logical connection
  bool refused = false;
};

Outcome readInPieces(std::string_view bytes, size_t piece) {
  Outcome out;
  MuxReader mux;
  std::map<uint32_t, TtrpcReader> ttrpc;
  for (size_t at = 0; at < bytes.size() && !out.refused; at += piece) {
    auto frames = mux.feed(bytes.substr(at, piece));
    if (!frames.ok()) {
      out.refused = true;
      VRI_FUZZ_CHECK(!mux.feed("").ok());  // refused for good
      break;
    }
    for (MuxFrame& frame : *frames) {
      VRI_FUZZ_CHECK(frame.conn != 0 && frame.payload.size() <= kMuxMaxPayloadBytes);
      auto messages = ttrpc[frame.conn].feed(frame.payload);
      out.frames.push_back(std::move(frame));
      if (!messages.ok()) {
        out.refused = true;
        break;
      }
      for (TtrpcMessage& m : *messages) out.messages.emplace_back(out.frames.back().conn, std::move(m));
    }
  }
  return out;
}

bool sameMessages(const Outcome& a, const Outcome& b) {
  if (a.refused != b.refused || a.messages.size() != b.messages.size()) return false;
  for (size_t i = 0; i < a.messages.size(); ++i) {
    const auto& [connA, ma] = a.messages[i];
    const auto& [connB, mb] = b.messages[i];
    if (connA != connB || ma.streamId != mb.streamId || ma.type != mb.type || ma.flags != mb.flags ||
        ma.payload != mb.payload) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  const size_t piece = 1 + in.kind;
  const Outcome whole = readInPieces(in.text, in.text.size() + 1);
  const Outcome pieces = readInPieces(in.text, piece);
  // A read that ends in refused bytes closes the connection: what came before it in that same read
  // is dropped, so only a stream read whole without refusal must read the same in pieces.
  if (whole.refused) {
    VRI_FUZZ_CHECK(pieces.refused);
  } else {
    VRI_FUZZ_CHECK(sameMessages(whole, pieces));
  }

  // Every message is what its bytes say: encoded again, the stream of its connection holds it.
  std::map<uint32_t, std::string> streams;
  for (const MuxFrame& frame : whole.frames) streams[frame.conn] += frame.payload;
  std::map<uint32_t, size_t> consumed;
  for (const auto& [conn, message] : whole.messages) {
    VRI_FUZZ_CHECK(message.payload.size() <= kTtrpcMaxMessageBytes);
    VRI_FUZZ_CHECK(message.streamId != 0);
    VRI_FUZZ_CHECK(message.type == TtrpcType::kRequest || message.type == TtrpcType::kResponse ||
                   message.type == TtrpcType::kData);
    const Result<std::string> again = encodeTtrpc(message);
    VRI_FUZZ_CHECK(again.ok());
    VRI_FUZZ_CHECK(streams[conn].compare(consumed[conn], again->size(), *again) == 0);
    consumed[conn] += again->size();
    // The runtime's calls: the envelope either parses or the connection would be closed.
    ttrpc::Request request;
    if (message.type == TtrpcType::kRequest && request.ParseFromString(message.payload)) {
      (void)request.service();
    }
  }
  return 0;
}
