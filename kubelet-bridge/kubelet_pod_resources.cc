#include "kubelet-bridge/kubelet_pod_resources.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include "proto/grpc_status.h"
#include "proto/unix_channel.h"

namespace vri {

namespace {

// kubelet restarts in seconds: a call finds it again within its deadline, not after gRPC's default
// back-off of up to 2 minutes.
std::shared_ptr<grpc::Channel> quickReconnectChannel(const std::string& socketPath) {
  return unixChannel(socketPath, {.quickReconnect = true});
}

}  // namespace

KubeletPodResources::KubeletPodResources(std::string socketPath)
    : socketPath_(std::move(socketPath)),
      stub_(::v1::PodResourcesLister::NewStub(quickReconnectChannel(socketPath_))) {}

Result<std::set<std::string>> KubeletPodResources::activePods(std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  context.set_wait_for_ready(true);  // a kubelet that is starting again answers within the deadline
  ::v1::ListPodResourcesResponse reply;
  const grpc::Status status = stub_->List(&context, ::v1::ListPodResourcesRequest(), &reply);
  if (!status.ok()) return fromGrpcStatus(status);
  std::set<std::string> pods;
  for (const ::v1::PodResources& pod : reply.pod_resources()) pods.insert(pod.namespace_() + "/" + pod.name());
  return pods;
}

std::optional<std::chrono::seconds> KubeletPodResources::upFor() {
  struct stat socket {};
  if (::stat(socketPath_.c_str(), &socket) != 0 || !S_ISSOCK(socket.st_mode)) return std::nullopt;
  const auto made = std::chrono::system_clock::from_time_t(socket.st_mtim.tv_sec);
  const auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - made);
  return std::max(up, std::chrono::seconds(0));
}

}  // namespace vri
