// Where kubelet puts pods and containers, for its two cgroup drivers.
//
//   cgroupfs: kubepods/[burstable|besteffort/]pod<uid>/<container-id>
//   systemd:  kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
//
// Guaranteed pods sit directly under kubepods. Pod UIDs and container ids are
// validated before any path is built. Each name form is read back here too,
// beside the code that builds it: this is the one parser of kubelet's names.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "cgroup-model/cgroup_path.h"

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
// A container's name within its pod: VRI keys the ledger by it (escaped) and never builds a path
// from it (runtime ids, which do name cgroups, are validateContainerId's). kubelet's names are DNS
// labels (at most 63 characters) and no Kubernetes name is longer than 253; CRI itself sets no
// bound. VRI takes up to kMaxContainerNameBytes, room for other CRI clients, so that one name
// cannot swell every listing, and no control character, which would reach an operator's terminal.
inline constexpr size_t kMaxContainerNameBytes = 512;
Result<void> validateContainerName(std::string_view name);

// A pod, as its cgroup names it.
struct KubeletPod {
  QosClass qos = QosClass::kGuaranteed;
  std::string uid;
};

class KubeletNamer {
 public:
  virtual ~KubeletNamer() = default;
  virtual CgroupPath kubepods() const = 0;
  // The QoS parent: kubepods itself for Guaranteed.
  virtual CgroupPath qos(QosClass qos) const = 0;
  virtual Result<CgroupPath> pod(QosClass qos, std::string_view uid) const = 0;
  virtual Result<CgroupPath> container(QosClass qos, std::string_view uid, std::string_view id) const = 0;

  // The names read back. A pod directory under the QoS parent `qos` (its UID), a
  // container directory under a pod (its id: under systemd, any runtime's
  // `<prefix>-<id>.scope`), a QoS parent among kubepods' children; nullopt or
  // false for anything else.
  virtual std::optional<std::string> podUidOf(QosClass qos, std::string_view name) const = 0;
  virtual std::optional<std::string> containerIdOf(std::string_view name) const = 0;
  virtual bool isQosParent(std::string_view name) const = 0;
  // The pod a cgroup parent names as kubelet hands it to the runtime: the whole
  // path (cgroupfs: "/kubepods/burstable/pod<uid>"), or under systemd the pod's
  // slice name alone ("kubepods-burstable-pod<uid_>.slice"). Only where this
  // node puts pods: anything else is refused, quoted.
  Result<KubeletPod> podOfCgroupParent(std::string_view parent) const;

 protected:
  // Whether kubelet names a pod's parent by its leaf alone (systemd's slice names).
  virtual bool leafNamesPod() const = 0;
};

// `parent` is where kubepods sits (kubelet's --cgroup-root; the root by default).
// `runtimePrefix` names container scopes under systemd ("cri-containerd").
std::unique_ptr<KubeletNamer> makeKubeletNamer(KubeletDriver driver, CgroupPath parent = {},
                                               std::string runtimePrefix = "cri-containerd");

}  // namespace vri
