// NRI's two framings as bytes: what the multiplexer and ttRPC write, read back in any pieces, and
// the bytes each refuses (the connection is then closed: nothing after them is read).
#include "nri/wire_frames.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri::nri {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(WireFramesTest, TtrpcHeaderIsTenBytesBigEndian) {
  const auto bytes = encodeTtrpc({0x01020304, TtrpcType::kResponse, 0x1, "ab"});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, std::string("\x00\x00\x00\x02\x01\x02\x03\x04\x02\x01"
                                "ab",
                                12));
}

TEST(WireFramesTest, MuxFramesCarryAConnIdAndALengthAndSplitAt4KiB) {
  EXPECT_EQ(encodeMuxFrames(kRuntimeServiceConn, "xyz"), std::string("\x00\x00\x00\x02\x00\x00\x00\x03xyz", 11));
  const std::string big(10000, 'b');
  const std::string frames = encodeMuxFrames(kPluginServiceConn, big);
  EXPECT_EQ(frames.size(), big.size() + 3 * kMuxHeaderBytes);  // 4096 + 4096 + 1808
  MuxReader reader;
  auto read = reader.feed(frames);
  ASSERT_TRUE(read.ok());
  ASSERT_THAT(*read, SizeIs(3));
  EXPECT_EQ((*read)[0].payload.size(), kMuxWriteFrameBytes);
  EXPECT_EQ((*read)[0].payload + (*read)[1].payload + (*read)[2].payload, big);
}

TEST(WireFramesTest, MessagesReadBackWhateverPiecesTheBytesArriveIn) {
  std::string stream;
  for (uint32_t id = 1; id <= 5; id += 2) {
    stream += encodeMuxFrames(kPluginServiceConn,
                              *encodeTtrpc({id, TtrpcType::kRequest, 0, std::string(3000 * id, char('a' + id))}));
  }
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, stream.size()}) {
    MuxReader mux;
    TtrpcReader ttrpc;
    std::vector<TtrpcMessage> messages;
    for (size_t at = 0; at < stream.size(); at += piece) {
      auto frames = mux.feed(std::string_view(stream).substr(at, piece));
      ASSERT_TRUE(frames.ok());
      for (const MuxFrame& f : *frames) {
        EXPECT_EQ(f.conn, kPluginServiceConn);
        auto got = ttrpc.feed(f.payload);
        ASSERT_TRUE(got.ok());
        for (auto& m : *got) messages.push_back(std::move(m));
      }
    }
    ASSERT_THAT(messages, SizeIs(3)) << "pieces of " << piece;
    EXPECT_EQ(messages[2].streamId, 5u);
    EXPECT_EQ(messages[2].payload, std::string(15000, 'f'));
  }
}

TEST(WireFramesTest, OversizedAndMeaninglessBytesAreRefusedForGood) {
  EXPECT_THAT(encodeTtrpc({1, TtrpcType::kRequest, 0, std::string(kTtrpcMaxMessageBytes + 1, 'x')}).error().message(),
              HasSubstr("past the limit of 4194304"));
  EXPECT_TRUE(encodeTtrpc({1, TtrpcType::kRequest, 0, std::string(kTtrpcMaxMessageBytes, 'x')}).ok());

  MuxReader reserved;
  EXPECT_THAT(reserved.feed(std::string("\0\0\0\0\0\0\0\1x", 9)).error().message(), HasSubstr("reserved connection 0"));
  EXPECT_FALSE(reserved.feed(encodeMuxFrames(1, "fine")).ok());  // nothing after bad bytes is read
  MuxReader huge;
  EXPECT_THAT(huge.feed(std::string("\0\0\0\1\x7f\xff\xff\xff", 8)).error().message(), HasSubstr("past the limit"));

  TtrpcReader length;
  EXPECT_THAT(length.feed(std::string("\x00\x40\x00\x01\0\0\0\1\1\0", 10)).error().message(),
              HasSubstr("past the limit"));
  TtrpcReader type;
  EXPECT_THAT(type.feed(std::string("\0\0\0\0\0\0\0\1\x09\0", 10)).error().message(), HasSubstr("type 9"));
  TtrpcReader stream;
  EXPECT_THAT(stream.feed(std::string("\0\0\0\0\0\0\0\0\1\0", 10)).error().message(), HasSubstr("stream 0"));
  // A header alone, its payload still to come: nothing yet, and no error.
  TtrpcReader partial;
  auto none = partial.feed(std::string("\0\0\0\5\0\0\0\1\1\0ab", 12));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace vri::nri
