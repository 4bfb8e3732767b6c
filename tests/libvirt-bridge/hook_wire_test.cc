// vri-hook's hand-written side of the hook socket against protobuf's generated
// classes, which vrid uses: each reads exactly what the other wrote.
#include "libvirt-bridge/hook_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/hook_call.pb.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

TEST(HookWireTest, ACallIsWhatProtobufReads) {
  // A domain XML with bytes that matter: a NUL, high bytes, and a size past one varint byte.
  std::string xml = "<domain>\0\xff" + std::string(300000, 'x') + "</domain>";
  xml[8] = '\0';
  const std::string frame = encodeHookCallFrame({.args = {"-x", "prepare", "begin", "-"},
                                                 .domainXml = xml,
                                                 .clientVersion = "vri-hook/0.1.0-1",
                                                 .refuseWhenUnreachable = true,
                                                 .qemuPidDir = "/run/libvirt/qemu"});
  ASSERT_EQ(hookFrameSize(frame), frame.size() - kHookFrameHeaderBytes);
  hook::v1::HookCall call;
  ASSERT_TRUE(call.ParseFromString(frame.substr(kHookFrameHeaderBytes)));
  ASSERT_EQ(call.args_size(), 4);
  EXPECT_EQ(call.args(0), "-x");
  EXPECT_EQ(call.args(3), "-");
  EXPECT_EQ(call.domain_xml(), xml);
  EXPECT_EQ(call.client_version(), "vri-hook/0.1.0-1");
  EXPECT_TRUE(call.refuse_when_unreachable());
  EXPECT_EQ(call.qemu_pid_dir(), "/run/libvirt/qemu");
  // Empty fields are left out, as protobuf leaves them out.
  const std::string bare = encodeHookCallFrame({.args = {"", "x"}});
  ASSERT_TRUE(call.ParseFromString(bare.substr(kHookFrameHeaderBytes)));
  EXPECT_EQ(call.args_size(), 2);
  EXPECT_FALSE(call.refuse_when_unreachable());
  EXPECT_EQ(bare.substr(kHookFrameHeaderBytes), call.SerializeAsString());
}

TEST(HookWireTest, AnAnswerIsWhatProtobufWrote) {
  for (const int code : {0, 1, -1, 255, 2147483647}) {
    hook::v1::HookAnswer sent;
    sent.set_exit_code(code);
    sent.set_out(std::string(200000, 'o'));
    sent.set_err("vri: one line\n");
    const auto received = decodeHookAnswer(sent.SerializeAsString());
    ASSERT_TRUE(received.ok()) << received.error().message();
    EXPECT_EQ(received->exitCode, code);
    EXPECT_EQ(received->out, sent.out());
    EXPECT_EQ(received->err, sent.err());
  }
  // A field vri-hook does not know (a later vrid's) is skipped.
  hook::v1::HookAnswer later;
  later.set_exit_code(1);
  std::string bytes = later.SerializeAsString() + "\x25" + std::string("abcd") + "\x4a\x02hi";
  const auto skipped = decodeHookAnswer(bytes);
  ASSERT_TRUE(skipped.ok()) << skipped.error().message();
  EXPECT_EQ(skipped->exitCode, 1);
  EXPECT_EQ(decodeHookAnswer("")->exitCode, 0);
}

TEST(HookWireTest, WhatIsNotAnAnswerIsRefusedWithTheReason) {
  EXPECT_THAT(decodeHookAnswer("\x08").error().message(), HasSubstr("field 1's value is cut short"));
  EXPECT_THAT(decodeHookAnswer("\x12\x05"
                               "abc")
                  .error()
                  .message(),
              HasSubstr("longer than the message"));
  EXPECT_THAT(decodeHookAnswer("\x0b").error().message(), HasSubstr("wire type 3"));
  EXPECT_THAT(decodeHookAnswer(std::string("\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 11)).error().message(),
              HasSubstr("key is cut short"));
  // What a gRPC server sends first (an HTTP/2 SETTINGS frame) is not an answer.
  EXPECT_FALSE(decodeHookAnswer(std::string("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64", 15)).ok());
  EXPECT_EQ(hookFrameSize(hookFrameHeader(0x01020304)), 0x01020304u);
}

}  // namespace
}  // namespace vri
