// vri-cri-shim as a process: its listening path is its own. A second shim on a
// live shim's path stops at once and leaves that socket alone; a file at the
// path is neither served on nor removed; a stopped shim removes only the socket
// it bound. No containerd or vrid is needed to start: their channels connect lazily.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "base/unix_socket.h"
#include "kubelet-bridge/cri.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using ::testing::HasSubstr;
using testing::readFile;
using testing::spawn;

class Shim {
 public:
  Shim(const testing::TempDir& tmp, const std::string& name, const std::string& listen)
      : log_(tmp.sub(name + ".log")),
        pid_(spawn({VRI_CRI_SHIM_BINARY, "--listen=" + listen, "--containerd=" + tmp.sub("absent/containerd.sock"),
                    "--vrid=" + tmp.sub("absent/vri.sock")},
                   log_, O_TRUNC, true)) {}
  ~Shim() { stop(SIGKILL); }

  // Until it says "ready" (true) or exits (false), within a deadline.
  bool ready() {
    bool exited = false;
    testing::eventually(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            exited = true;
          }
          return exited || readFile(log_).find("; ready") != std::string::npos;
        },
        std::chrono::seconds(10 * testing::timeScale()));
    return !exited && readFile(log_).find("; ready") != std::string::npos;
  }
  int stop(int signal = SIGTERM) {
    if (pid_ > 0) {
      ::kill(pid_, signal);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return exitCode_;
  }
  std::string log() const { return readFile(log_); }

 private:
  std::string log_;
  pid_t pid_;
  int exitCode_ = -1;
};

// Whoever can create containers through the shim can take any CPU: its socket is its user's alone,
// and a directory others may write (where they could put a socket of their own) is refused.
TEST(CriShimProcessTest, ItsSocketIsItsUsersAloneInADirectoryNobodyElseWrites) {
  testing::TempDir tmp;
  ASSERT_EQ(::mkdir(tmp.sub("run").c_str(), 0755), 0);
  const std::string listen = tmp.sub("run/cri.sock");
  {
    Shim shim(tmp, "shim", listen);
    ASSERT_TRUE(shim.ready()) << shim.log();
    struct stat st {};
    ASSERT_EQ(::stat(listen.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  ASSERT_EQ(::chmod(tmp.sub("run").c_str(), 01777), 0);
  Shim refused(tmp, "refused", listen);
  EXPECT_FALSE(refused.ready());
  EXPECT_EQ(refused.stop(), 1);
  EXPECT_THAT(refused.log(), HasSubstr("the directory of " + listen + ": " + tmp.sub("run") +
                                       " may be written by everyone (mode 1777)"));
}

// A request above the shim's 64 MiB limit is refused before the shim parses it (CreateContainer,
// which the shim handles: nothing is asked of vrid, which is absent here and would answer
// UNAVAILABLE) or sends it on.
TEST(CriShimProcessTest, ARequestAboveTheLimitIsRefusedBeforeItIsRead) {
  testing::TempDir tmp;
  const std::string listen = tmp.sub("run/cri.sock");
  Shim shim(tmp, "shim", listen);
  ASSERT_TRUE(shim.ready()) << shim.log();
  auto stub =
      runtime::v1::RuntimeService::NewStub(grpc::CreateChannel("unix:" + listen, grpc::InsecureChannelCredentials()));
  runtime::v1::CreateContainerRequest request;
  request.set_pod_sandbox_id(std::string((64 << 20) + 1, 'x'));
  runtime::v1::CreateContainerResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30 * testing::timeScale()));
  const grpc::Status status = stub->CreateContainer(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  // gRPC's receive limit (set on the shim's server) answers first, from the message's length prefix.
  EXPECT_THAT(status.error_message(), HasSubstr("larger than max (67108870 vs. 67108864)"));
  EXPECT_THAT(shim.log(), ::testing::Not(HasSubstr("CreateContainer")));
}

TEST(CriShimProcessTest, ASecondShimOnALiveShimsPathStopsAndLeavesItsSocket) {
  testing::TempDir tmp;
  const std::string listen = tmp.sub("run/cri.sock");
  Shim first(tmp, "first", listen);
  ASSERT_TRUE(first.ready()) << first.log();
  struct stat before {};
  ASSERT_EQ(::stat(listen.c_str(), &before), 0);
  Shim second(tmp, "second", listen);
  EXPECT_FALSE(second.ready());
  EXPECT_EQ(second.stop(), 1);
  EXPECT_THAT(second.log(), HasSubstr("another process serves on " + listen));
  struct stat after {};
  ASSERT_EQ(::stat(listen.c_str(), &after), 0) << "the second shim removed the live socket";
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_TRUE(socketAcceptsConnections(listen));
  EXPECT_EQ(first.stop(), 0);
  EXPECT_FALSE(std::filesystem::exists(listen)) << "a stopped shim leaves its socket";
}

TEST(CriShimProcessTest, AFileAtTheListeningPathIsNeitherServedOnNorRemoved) {
  testing::TempDir tmp;
  const std::string listen = tmp.sub("cri.sock");
  std::ofstream(listen) << "an operator's file\n";
  Shim shim(tmp, "shim", listen);
  EXPECT_FALSE(shim.ready());
  EXPECT_EQ(shim.stop(), 1);
  EXPECT_THAT(shim.log(), HasSubstr("exists and is not a socket; not removing it"));
  EXPECT_EQ(readFile(listen), "an operator's file\n");
}

}  // namespace
}  // namespace vri
