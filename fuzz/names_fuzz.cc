// The names of cgroups: kubelet's (pod and container directories, QoS parents, the cgroup parent a
// runtime is handed) for both cgroup drivers, libvirt's VM scopes for its three layouts, and
// cgroup paths themselves. A name VRI builds must read back to what it was built from; a name
// read from outside is either refused or a valid pod UID, container id or path.
#include "cgroup-model/cgroup_path.h"
#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/libvirt_namer.h"
#include "fuzz/fuzz_input.h"

using namespace vri;

namespace {

constexpr QosClass kQos[] = {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort};

bool isPathRoundTrip(const CgroupPath& path) {
  const Result<CgroupPath> again = CgroupPath::parse(path.str());
  return again.ok() && *again == path;
}

void kubeletNames(const KubeletNamer& namer, bool systemd, uint8_t kind, std::string_view text) {
  switch (kind % 3) {
    case 0: {  // built, then read back
      const auto f = fuzz::fields(text);
      const std::string_view uid = f[0], id = f.size() > 1 ? f[1] : std::string_view("c0ffee");
      if (!validatePodUid(uid).ok()) return;
      for (QosClass qos : kQos) {
        const Result<CgroupPath> pod = namer.pod(qos, uid);
        // Under systemd a UID with '_' is refused: its slice could not be told from another's.
        if (systemd && uid.find('_') != std::string_view::npos) {
          VRI_FUZZ_CHECK(!pod.ok());
          continue;
        }
        VRI_FUZZ_CHECK(pod.ok());
        VRI_FUZZ_CHECK(isPathRoundTrip(*pod));
        VRI_FUZZ_CHECK(namer.podUidOf(qos, pod->leaf()) == std::string(uid));
        if (!validateContainerId(id).ok()) continue;
        const Result<CgroupPath> container = namer.container(qos, uid, id);
        VRI_FUZZ_CHECK(container.ok());
        VRI_FUZZ_CHECK(container->parent() == *pod);
        VRI_FUZZ_CHECK(namer.containerIdOf(container->leaf()) == std::string(id));
      }
      break;
    }
    case 1:  // read from a directory listing
      for (QosClass qos : kQos) {
        if (const auto uid = namer.podUidOf(qos, text)) {
          VRI_FUZZ_CHECK(validatePodUid(*uid).ok());
          const Result<CgroupPath> pod = namer.pod(qos, *uid);
          VRI_FUZZ_CHECK(pod.ok());
        }
      }
      if (const auto id = namer.containerIdOf(text)) VRI_FUZZ_CHECK(validateContainerId(*id).ok());
      (void)namer.isQosParent(text);
      break;
    case 2: {  // the cgroup parent in a RunPodSandbox request
      const Result<KubeletPod> pod = namer.podOfCgroupParent(text);
      if (!pod.ok()) break;
      VRI_FUZZ_CHECK(validatePodUid(pod->uid).ok());
      VRI_FUZZ_CHECK(namer.pod(pod->qos, pod->uid).ok());
      break;
    }
  }
}

void libvirtNames(uint8_t kind, std::string_view text) {
  const int id = kind;  // libvirt's domain ids are small positive numbers
  const std::string machine = libvirtMachineName(id, text);
  VRI_FUZZ_CHECK(machine.size() <= 64);
  for (char c : machine)
    VRI_FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.');
  for (LibvirtLayout layout :
       {LibvirtLayout::kSystemd, LibvirtLayout::kSystemdWithLibvirtLevel, LibvirtLayout::kNoSystemd}) {
    const CgroupPath partition = *CgroupPath::parse(layout == LibvirtLayout::kNoSystemd ? "machine" : "machine.slice");
    const LibvirtNamer namer(layout, partition);
    const Result<CgroupPath> scope = namer.scope(id, text);
    if (!scope.ok()) continue;
    VRI_FUZZ_CHECK(scope->parent() == partition);
    VRI_FUZZ_CHECK(isPathRoundTrip(*scope));
    VRI_FUZZ_CHECK(isPathRoundTrip(namer.vcpu(*scope, 0)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  switch (in.kind % 4) {
    case 0: kubeletNames(*makeKubeletNamer(KubeletDriver::kCgroupfs), false, in.kind / 4, in.text); break;
    case 1: kubeletNames(*makeKubeletNamer(KubeletDriver::kSystemd), true, in.kind / 4, in.text); break;
    case 2: libvirtNames(in.kind / 4, in.text); break;
    case 3:
      if (const Result<CgroupPath> path = CgroupPath::parse(in.text); path.ok()) VRI_FUZZ_CHECK(isPathRoundTrip(*path));
      break;
  }
  return 0;
}
