// What the shim's pass-through tests share (cri_passthrough_test.cc, cri_whole_api_test.cc): the
// containerd under test, one call asked of a socket as raw bytes, and a fixture that runs
// vri-cri-shim in front of that containerd.
#pragma once

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/containerd/containerd_under_test.h"
#include "tests/support/eventually.h"
#include "tests/support/generic_call.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri::cri_passthrough {

inline const testing::ContainerdUnderTest kUnderTest = testing::containerdUnderTest();
inline const std::string kContainerd = kUnderTest.socket();

struct Answer {
  std::vector<std::string> replies;
  grpc::StatusCode code;
  std::string message;
};

inline Answer ask(const std::string& socket, const std::string& method, const std::string& request = "") {
  grpc::GenericStub stub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  testing::GenericCall call(stub, context, method, {request});
  EXPECT_TRUE(call.wait()) << method;
  return {call.replies, call.status.error_code(), call.status.error_message()};
}

class CriPassthroughTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kContainerd))
        << "containerd is not running at " << kContainerd << ": " << kUnderTest.fixtureHint();
    shim_ = testing::spawn({VRI_CRI_SHIM_BINARY, "--listen=" + socket(), "--containerd=" + kContainerd},
                           tmp_.sub("shim.log"), O_TRUNC, true);
    ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(socket()); }))
        << testing::readFile(tmp_.sub("shim.log"));
  }
  void TearDown() override {
    ::kill(shim_, SIGTERM);
    int status = 0;
    ::waitpid(shim_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::readFile(tmp_.sub("shim.log"));
    EXPECT_FALSE(std::filesystem::exists(socket()));  // removed at exit
  }
  std::string socket() const { return tmp_.sub("cri.sock"); }

  testing::TempDir tmp_;
  pid_t shim_ = -1;
};

}  // namespace vri::cri_passthrough
