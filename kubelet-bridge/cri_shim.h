// CriShim: the CRI calls vri-cri-shim does not just pass through. Each runs on
// the shim's worker threads, calls vrid with a bounded deadline and containerd
// with kubelet's, and holds no lock across either, so calls for different pods
// proceed in parallel.
//
//   RunPodSandbox     admit the pod (QoS from its cgroup parent), run it, bind the sandbox id
//   CreateContainer   ask vrid for the allocation (by pod UID and container name), write it
//                     into the request with full explicit values, create, bind the container id
//   UpdateContainerResources   resize through vrid, forward what vrid granted
//   RemoveContainer / RemovePodSandbox   remove, then release by runtime id (a no-op for an
//                     id that is no longer the current one)
//
// Without an allocation nothing is created: vrid's refusal comes back with its
// code and reason, and an unreachable vrid is UNAVAILABLE with a clear message.
// What a failed call admitted is released again; nothing is left half-applied.
// StopPodSandbox passes through: kubelet stops a sandbox before re-creating
// it, and the pod keeps its CPUs until its sandbox is removed.
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cgroup-model/rate_limited_log.h"
#include "cgroup-model/thread_annotations.h"
#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/generic_proxy.h"
#include "kubelet-bridge/memory_nodes.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

struct CriShimOptions {
  std::chrono::milliseconds vridTimeout{2000};  // every vrid call, within kubelet's own deadline
  bool cgroupV2 = false;                        // runc takes `unified` values only on v2
  std::function<void(const std::string&)> log = [](const std::string&) {};
};

class CriShim {
 public:
  CriShim(std::shared_ptr<grpc::Channel> containerd, std::shared_ptr<grpc::Channel> vrid, CriShimOptions options);

  // The methods it handles, by full name, for GenericProxy.
  std::map<std::string, UnaryHandler> handlers();

 private:
  using Caller = grpc::GenericCallbackServerContext;
  grpc::Status runPodSandbox(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);
  grpc::Status createContainer(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);
  grpc::Status updateContainerResources(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);
  grpc::Status removeContainer(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);
  grpc::Status removePodSandbox(Caller& caller, const grpc::ByteBuffer& request, grpc::ByteBuffer* reply);

  // containerd removes it, then vrid releases by its runtime id (a no-op for an id it no longer holds).
  using Release = std::function<grpc::Status(grpc::ClientContext*, v1::Released*)>;
  grpc::Status removeThenRelease(Caller& caller, const char* name, const std::string& id,
                                 const grpc::ByteBuffer& request, grpc::ByteBuffer* reply, const Release& release);
  // A context for a vrid call: vridTimeout, or kubelet's deadline if sooner.
  std::unique_ptr<grpc::ClientContext> vridContext(const Caller& caller) const;
  // The pod's containers that finished for good, from containerd's list.
  grpc::Status finishedContainers(Caller& caller, const std::string& podUid, const std::string& sandboxId,
                                  const std::string& creating, v1::AdmitContainerRequest& admit);
  // The node's cgroup version and memory nodes.
  grpc::Status nodeCgroups(Caller& caller, cri::NodeCgroups* out);
  // Undoes what this call admitted; logs what it could not.
  void undoContainer(const v1::AdmitContainerRequest& admit);
  // Puts vrid back to `previous` after containerd refused a resize vrid had made.
  void undoResize(const std::string& containerId, const v1::ContainerResources& previous);
  void undoPod(const std::string& podUid);
  // Takes down what containerd made when vrid could not record it.
  void removeFromContainerd(const std::string& method, const google::protobuf::MessageLite& request);

  grpc::GenericStub containerd_;
  std::unique_ptr<v1::Vri::Stub> vrid_;
  CriShimOptions options_;
  RateLimitedLog refusals_;
  MemoryNodes memoryNodes_;
};

}  // namespace vri
