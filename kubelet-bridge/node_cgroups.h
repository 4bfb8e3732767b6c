// The node's cgroups as vrid reports them (its cgroup version, every memory
// node), asked of vrid once and kept: they do not change while the shim runs,
// and the shim probes nothing itself.
#pragma once

#include <optional>

#include "base/thread_annotations.h"
#include "kubelet-bridge/cri_translate.h"
#include "kubelet-bridge/vrid_client.h"

namespace vri {

class KnownNodeCgroups {
 public:
  // vrid's error when it could not be asked (nothing is kept then).
  Result<cri::NodeCgroups> get(VridClient& vrid, const CallScope& scope) {
    {
      MutexLock lock(mutex_);
      if (known_) return *known_;
    }
    VRI_ASSIGN_OR_RETURN(const v1::Node node, vrid.node(scope));
    VRI_ASSIGN_OR_RETURN(cri::NodeCgroups cgroups, cri::nodeCgroups(node));
    MutexLock lock(mutex_);
    known_ = cgroups;
    return cgroups;
  }

 private:
  Mutex mutex_;
  std::optional<cri::NodeCgroups> known_ VRI_GUARDED_BY(mutex_);
};

}  // namespace vri
