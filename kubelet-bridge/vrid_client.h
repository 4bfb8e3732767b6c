// VridClient: vrid as the kubelet side calls it, one Result per call.
// GrpcVridClient (grpc_vrid_client.h) is vrid's gRPC API; tests bring
// tests/support/fake_vrid.h.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "kubelet-bridge/runtime_client.h"
#include "proto/vri.pb.h"

namespace vri {

// One Watch stream of vrid's events.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // The next event; false once the stream has ended (vrid gone, or cancelled).
  virtual bool next(v1::Event& event) = 0;
  // Why it ended (after next() said false).
  virtual Error finish() = 0;
  // Ends the stream from another thread: next() returns false soon.
  virtual void cancel() = 0;
};

class VridClient {
 public:
  virtual ~VridClient() = default;

  // Admit (and, with a runtime id in the request, bind).
  virtual Result<v1::PodAllocation> admitPod(const CallScope& scope, const v1::AdmitPodRequest& request) = 0;
  virtual Result<v1::ContainerAllocation> admitContainer(const CallScope& scope,
                                                         const v1::AdmitContainerRequest& request) = 0;
  virtual Result<v1::ContainerAllocation> resizeContainer(const CallScope& scope,
                                                          const v1::AdmitContainerRequest& request) = 0;
  // Release: whether anything was released (a guarded release of an id vrid no longer holds is not).
  virtual Result<bool> releasePod(const CallScope& scope, const v1::ReleasePodRequest& request) = 0;
  virtual Result<bool> releaseContainer(const CallScope& scope, const v1::ReleaseContainerRequest& request) = 0;
  // The runtime made the container's cgroup (it starts): vrid writes it (NOT_FOUND: no container holds the id).
  virtual Result<v1::ContainerStartedReply> containerStarted(const CallScope& scope,
                                                             const std::string& containerId) = 0;
  // List every pod, get one, the node.
  virtual Result<v1::TenantList> listPods(const CallScope& scope) = 0;
  virtual Result<v1::Tenant> getPod(const CallScope& scope, const std::string& podUid) = 0;
  virtual Result<v1::Node> node(const CallScope& scope) = 0;
  // A new stream of events from now on.
  virtual std::unique_ptr<EventStream> watch() = 0;
};

}  // namespace vri
