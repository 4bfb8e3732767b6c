// vri-cri-shim in front of a real containerd (labels `containerd` and
// `containerd2`; start them with tests/containerd/containerd-fixture.sh up 1.6|2):
// calls it does not change answer byte for byte as containerd answers them
// directly: runtime and image calls, calls on a running container (status,
// list, ExecSync) and a method containerd does not implement. Every call of CRI's
// whole API: cri_whole_api_test.cc.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/containerd/cri_passthrough_fixture.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

using cri_passthrough::Answer;
using cri_passthrough::ask;
using cri_passthrough::CriPassthroughTest;
using cri_passthrough::kContainerd;
using cri_passthrough::kUnderTest;

// The same answer through the shim as directly: byte for byte, or, for replies
// with maps (containerd writes Go maps in no fixed order), equal as `Reply` messages.
template <typename Reply = void>
void expectSameAnswers(const std::string& shim, const std::string& method, const std::string& request) {
  const Answer direct = ask(kContainerd, method, request), through = ask(shim, method, request);
  EXPECT_EQ(direct.code, grpc::StatusCode::OK) << method << ": " << direct.message;
  EXPECT_EQ(through.code, direct.code) << method;
  EXPECT_EQ(through.message, direct.message) << method;
  if constexpr (std::is_void_v<Reply>) {
    EXPECT_EQ(through.replies, direct.replies) << method;
  } else {
    ASSERT_EQ(through.replies.size(), 1u);
    ASSERT_EQ(direct.replies.size(), 1u);
    Reply a, b;
    ASSERT_TRUE(a.ParseFromString(direct.replies.front()) && b.ParseFromString(through.replies.front()));
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a, b)) << method;
  }
}

TEST_F(CriPassthroughTest, UnchangedCallsAnswerAsContainerdDoes) {
  for (const std::string method :
       {"/runtime.v1.RuntimeService/Version", "/runtime.v1.RuntimeService/Status",
        "/runtime.v1.RuntimeService/ListContainers", "/runtime.v1.RuntimeService/ListPodSandbox",
        "/runtime.v1.ImageService/ListImages", "/runtime.v1.RuntimeService/NoSuchMethod"}) {
    const Answer direct = ask(kContainerd, method), through = ask(socket(), method);
    EXPECT_EQ(through.code, direct.code) << method;
    EXPECT_EQ(through.message, direct.message) << method;
    EXPECT_EQ(through.replies, direct.replies) << method;
    if (method.ends_with("/Version")) {
      ASSERT_EQ(through.replies.size(), 1u);
      EXPECT_THAT(through.replies.front(), ::testing::HasSubstr("containerd"));
    }
    if (method.ends_with("/NoSuchMethod")) {
      EXPECT_EQ(through.code, grpc::StatusCode::UNIMPLEMENTED);
    }
  }
}

TEST_F(CriPassthroughTest, AStreamingMethodContainerdLacksComesBackAsContainerdSaysIt) {
  // containerd 1.6 does not implement GetContainerEvents: its code and message pass unchanged. 2.x
  // streams events until the call's deadline, where the message is gRPC's own (the client's timer or
  // the server's reset, whichever comes first): there only the codes are compared.
  const Answer direct = ask(kContainerd, "/runtime.v1.RuntimeService/GetContainerEvents");
  const Answer through = ask(socket(), "/runtime.v1.RuntimeService/GetContainerEvents");
  EXPECT_NE(direct.code, grpc::StatusCode::OK);
  EXPECT_EQ(through.code, direct.code);
  if (direct.code != grpc::StatusCode::DEADLINE_EXCEEDED) {
    EXPECT_EQ(through.message, direct.message);
  }
}

TEST_F(CriPassthroughTest, CallsOnARunningContainerAnswerAsContainerdDoes) {
  // A pod made on containerd directly (vrid is not running here: the shim has no allocation to give).
  const std::string root = "vri-cri-pass-" + std::to_string(::getpid());
  const std::string uid = root + "-1";
  cri_client::CriClient direct(kContainerd);
  const auto pod = cri_client::sandboxConfig(
      uid, "pass", cri_client::podCgroupParent("/" + root, cri_client::PodQos::kBestEffort, uid));
  std::string sandbox, container;
  ASSERT_TRUE(direct.runPodSandbox(pod, &sandbox).ok());
  ASSERT_TRUE(direct
                  .createContainer(sandbox, pod,
                                   cri_client::containerConfig(pod, "app", cri_client::kubeletResources(0, 0, 0)),
                                   &container)
                  .ok());
  ASSERT_TRUE(direct.startContainer(container).ok());

  runtime::v1::ContainerStatusRequest status;
  status.set_container_id(container);
  expectSameAnswers<runtime::v1::ContainerStatusResponse>(socket(), "/runtime.v1.RuntimeService/ContainerStatus",
                                                          status.SerializeAsString());
  runtime::v1::ListContainersRequest list;
  (*list.mutable_filter()->mutable_label_selector())["io.kubernetes.pod.uid"] = uid;
  expectSameAnswers<runtime::v1::ListContainersResponse>(socket(), "/runtime.v1.RuntimeService/ListContainers",
                                                         list.SerializeAsString());
  runtime::v1::ExecSyncRequest exec;
  exec.set_container_id(container);
  exec.add_cmd("/sleeper");
  exec.add_cmd("echo");
  exec.add_cmd("hello from the container");
  exec.set_timeout(10);
  expectSameAnswers(socket(), "/runtime.v1.RuntimeService/ExecSync", exec.SerializeAsString());
  const Answer ran = ask(socket(), "/runtime.v1.RuntimeService/ExecSync", exec.SerializeAsString());
  runtime::v1::ExecSyncResponse output;
  ASSERT_EQ(ran.replies.size(), 1u);
  ASSERT_TRUE(output.ParseFromString(ran.replies.front()));
  EXPECT_EQ(output.stdout(), "hello from the container\n");
  EXPECT_EQ(output.exit_code(), 0);
  // Image calls: the image's status by name, and the list.
  runtime::v1::ImageStatusRequest image;
  image.mutable_image()->set_image("localhost/vri/pause:1.0");
  expectSameAnswers(socket(), "/runtime.v1.ImageService/ImageStatus", image.SerializeAsString());
  expectSameAnswers(socket(), "/runtime.v1.ImageService/ListImages", "");

  EXPECT_TRUE(direct.stopPodSandbox(sandbox).ok());
  EXPECT_TRUE(direct.removePodSandbox(sandbox).ok());
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
    testing::removeCgroupTree(hierarchy.path().string() + "/" + root);
}

}  // namespace
}  // namespace vri
