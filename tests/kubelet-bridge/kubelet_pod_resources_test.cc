// KubeletPodResources against a pod-resources server on a real unix socket, as kubelet serves it:
// the pods it lists as namespace/name, and how long its socket has been up (label unit-grpc).
#include "kubelet-bridge/kubelet_pod_resources.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.h"

namespace vri {
namespace {

// A pod-resources server on a real socket, as kubelet serves it.
class ListingKubelet final : public ::v1::PodResourcesLister::Service {
 public:
  grpc::Status List(grpc::ServerContext*, const ::v1::ListPodResourcesRequest*,
                    ::v1::ListPodResourcesResponse* reply) override {
    ::v1::PodResources* pod = reply->add_pod_resources();
    pod->set_namespace_("kube-system");
    pod->set_name("etcd-node");
    pod = reply->add_pod_resources();
    pod->set_namespace_("default");
    pod->set_name("web");
    return grpc::Status::OK;
  }
};

TEST(KubeletPodResourcesTest, ListsNamespaceAndNameAndTellsHowLongTheSocketIsUp) {
  testing::TempDir tmp;
  const std::string socket = tmp.sub("kubelet.sock");
  KubeletPodResources kubelet(socket);
  EXPECT_FALSE(kubelet.upFor().has_value()) << "no socket";
  EXPECT_FALSE(kubelet.activePods(std::chrono::milliseconds(200)).ok());

  ListingKubelet service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto pods = kubelet.activePods(std::chrono::seconds(5));
  ASSERT_TRUE(pods.ok()) << pods.error().message();
  EXPECT_EQ(*pods, (std::set<std::string>{"default/web", "kube-system/etcd-node"}));
  ASSERT_TRUE(kubelet.upFor().has_value());
  EXPECT_LT(kubelet.upFor()->count(), 60);
  // A socket made ten minutes ago: kubelet up that long.
  const auto past = std::filesystem::file_time_type::clock::now() - std::chrono::minutes(10);
  std::filesystem::last_write_time(socket, past);
  EXPECT_GE(kubelet.upFor()->count(), 599);
  server->Shutdown();
}

}  // namespace
}  // namespace vri
