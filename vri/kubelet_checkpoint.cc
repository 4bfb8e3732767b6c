// kubelet's CPU manager checkpoint: go-spew's text of the checkpoint for the checksum, Go's JSON for
// the file, yaml-cpp (JSON is YAML) to read it (vri/kubelet_checkpoint_text.h).
#include "vri/kubelet_checkpoint.h"

#include "base/quote.h"
#include "vri/kubelet_checkpoint_text.h"

namespace vri {

namespace {

using kubelet_text::goJsonString;

// What go-spew prints for the checkpoint with `%#v` in kubelet's configuration (SortKeys,
// DisablePointerAddresses, DisableMethods): the pointer's type, then each field as
// `Name:(type)value`; inside a map neither keys nor values carry their type, strings are bare,
// and string keys sort bytewise.
std::string spewText(const CpuManagerCheckpoint& cp) {
  std::string out = "(*state.CPUManagerCheckpoint){PolicyName:(string)" + cp.policyName + " DefaultCPUSet:(string)" +
                    cp.defaultCpuSet + " Entries:(map[string]map[string]string)map[";
  bool firstPod = true;
  for (const auto& [pod, containers] : cp.entries) {
    if (!firstPod) out += ' ';
    firstPod = false;
    out += pod + ":map[";
    bool firstContainer = true;
    for (const auto& [container, cpus] : containers) {
      if (!firstContainer) out += ' ';
      firstContainer = false;
      out += container + ":" + cpus;
    }
    out += ']';
  }
  out += "] Checksum:(checksum.Checksum)0}";
  return out;
}

}  // namespace

uint32_t kubeletChecksum(const CpuManagerCheckpoint& checkpoint) { return kubelet_text::fnv32a(spewText(checkpoint)); }

std::string encodeCheckpoint(const CpuManagerCheckpoint& checkpoint) {
  std::string out = "{\"policyName\":" + goJsonString(checkpoint.policyName) +
                    ",\"defaultCpuSet\":" + goJsonString(checkpoint.defaultCpuSet);
  // `entries,omitempty`: an empty map is left out.
  if (!checkpoint.entries.empty()) {
    out += ",\"entries\":{";
    bool firstPod = true;
    for (const auto& [pod, containers] : checkpoint.entries) {
      out += (firstPod ? "" : ",") + goJsonString(pod) + ":{";
      firstPod = false;
      bool firstContainer = true;
      for (const auto& [container, cpus] : containers) {
        out += (firstContainer ? "" : ",") + goJsonString(container) + ":" + goJsonString(cpus);
        firstContainer = false;
      }
      out += "}";
    }
    out += "}";
  }
  return out + ",\"checksum\":" + std::to_string(kubeletChecksum(checkpoint)) + "}";
}

Result<CpuManagerCheckpoint> parseCpuManagerCheckpoint(std::string_view text, const std::string& origin) {
  VRI_ASSIGN_OR_RETURN(YAML::Node root, kubelet_text::loadObject(text, origin));
  CpuManagerCheckpoint cp;
  VRI_ASSIGN_OR_RETURN(cp.policyName, kubelet_text::stringMember(root, "policyName", origin));
  VRI_ASSIGN_OR_RETURN(cp.defaultCpuSet, kubelet_text::stringMember(root, "defaultCpuSet", origin));
  if (const YAML::Node entries = root["entries"]) {
    if (!entries.IsMap()) return Error::invalidArgument(origin + ": entries is not an object");
    for (const auto& pod : entries) {
      if (!pod.second.IsMap())
        return Error::invalidArgument(origin + ": entries of pod " + quoteForMessage(pod.first.Scalar()) +
                                      " is not an object of container to CPUs (a format before kubelet 1.12?)");
      auto& containers = cp.entries[pod.first.Scalar()];
      for (const auto& container : pod.second) {
        if (!container.second.IsScalar())
          return Error::invalidArgument(origin + ": the CPUs of " + quoteForMessage(container.first.Scalar()) +
                                        " are not a string");
        containers[container.first.Scalar()] = container.second.Scalar();
      }
    }
  }
  VRI_ASSIGN_OR_RETURN(cp.checksum, kubelet_text::checksumMember(root, origin));
  VRI_TRY(kubelet_text::verifyChecksum(cp.checksum, kubeletChecksum(cp), origin));
  return cp;
}

Result<std::string> checkpointPolicyName(std::string_view text, const std::string& origin) {
  VRI_ASSIGN_OR_RETURN(YAML::Node root, kubelet_text::loadObject(text, origin));
  return kubelet_text::stringMember(root, "policyName", origin);
}

}  // namespace vri
