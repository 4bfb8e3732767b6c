// Where kubelet puts pods and containers, for its two cgroup drivers.
//
//   cgroupfs: kubepods/[burstable|besteffort/]pod<uid>/<container-id>
//   systemd:  kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
//
// Guaranteed pods sit directly under kubepods. Pod UIDs and container ids are
// validated before any path is built.
#pragma once

#include <memory>
#include <string_view>

#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/result.h"

namespace vri {

enum class QosClass { kGuaranteed, kBurstable, kBestEffort };
std::string_view qosClassName(QosClass qos);  // "guaranteed", "burstable", "besteffort"

enum class KubeletDriver { kCgroupfs, kSystemd };
Result<KubeletDriver> parseKubeletDriver(std::string_view text);  // "cgroupfs" | "systemd"
std::string_view kubeletDriverName(KubeletDriver driver);

// A pod UID: 1-128 characters of [A-Za-z0-9_-] (UUIDs, static pods' hashes).
Result<void> validatePodUid(std::string_view uid);
// A container id: 1-128 characters of [A-Za-z0-9_.-], not starting with '.' or '-'.
Result<void> validateContainerId(std::string_view id);

class KubeletNamer {
 public:
  virtual ~KubeletNamer() = default;
  virtual CgroupPath kubepods() const = 0;
  // The QoS parent: kubepods itself for Guaranteed.
  virtual CgroupPath qos(QosClass qos) const = 0;
  virtual Result<CgroupPath> pod(QosClass qos, std::string_view uid) const = 0;
  virtual Result<CgroupPath> container(QosClass qos, std::string_view uid, std::string_view id) const = 0;
};

// `parent` is where kubepods sits (kubelet's --cgroup-root; the root by default).
// `runtimePrefix` names container scopes under systemd ("cri-containerd").
std::unique_ptr<KubeletNamer> makeKubeletNamer(KubeletDriver driver, CgroupPath parent = {},
                                               std::string runtimePrefix = "cri-containerd");

}  // namespace vri
