// Whether the runtime already holds the values VRI wants for a container: the one comparison the
// shared-pool follower and the NRI plugin make before sending an update. What `wanted` leaves
// unset ("" and 0: a pod outside kubelet's tree, whose CPUs alone are VRI's) is not compared; no
// quota is -1 or 0 on either side.
#pragma once

#include "kubelet-bridge/cri.pb.h"

namespace vri {

inline bool runtimeHolds(const runtime::v1::LinuxContainerResources& now,
                         const runtime::v1::LinuxContainerResources& wanted) {
  const auto same = [](const auto& a, const auto& b, const auto& unset) { return b == unset || a == b; };
  return now.cpuset_cpus() == wanted.cpuset_cpus() && same(now.cpuset_mems(), wanted.cpuset_mems(), "") &&
         same(now.cpu_shares(), wanted.cpu_shares(), 0) && same(now.cpu_period(), wanted.cpu_period(), 0) &&
         (wanted.cpu_quota() == 0 || now.cpu_quota() == wanted.cpu_quota() ||
          (now.cpu_quota() <= 0 && wanted.cpu_quota() <= 0));
}

}  // namespace vri
