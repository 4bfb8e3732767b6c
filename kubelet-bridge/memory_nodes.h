// Every memory node of vrid's node ("0-1"), asked of vrid once and kept: what
// cpuset.mems says for a container vrid binds to no node. The node's NUMA
// nodes do not change while the shim runs.
#pragma once

#include <grpcpp/client_context.h>

#include <optional>
#include <string>

#include "cgroup-model/thread_annotations.h"
#include "kubelet-bridge/cri_translate.h"
#include "proto/vri.grpc.pb.h"

namespace vri {

class MemoryNodes {
 public:
  // vrid's status when it could not be asked (nothing is kept then).
  grpc::Status get(v1::Vri::Stub& vrid, grpc::ClientContext& context, std::string* out) {
    {
      MutexLock lock(mutex_);
      if (known_) {
        *out = *known_;
        return grpc::Status::OK;
      }
    }
    v1::Node node;
    grpc::Status status = vrid.GetNode(&context, v1::GetNodeRequest(), &node);
    if (!status.ok()) return status;
    *out = cri::memoryNodes(node);
    MutexLock lock(mutex_);
    known_ = *out;
    return grpc::Status::OK;
  }

 private:
  Mutex mutex_;
  std::optional<std::string> known_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
