// The pods fingerprint a NodeResourceTopology object carries (attribute nodeTopologyPodsFingerprint),
// computed as the scheduler's NodeResourceTopologyMatch plugin computes it for the node from the pods
// it knows, so that its reserve cache (overreserve) can tell the object accounts for them. The value
// is "pfp0" "v001" and 16 hex digits: XXH64 over the pods' hashes, sorted ascending, each as 8
// little-endian bytes; a pod's hash is XXH64 of its name, seeded with XXH64 of its namespace.
#pragma once

#include <string>
#include <vector>

namespace vri::topology_export {

struct PodName {
  std::string name_space;
  std::string name;
};

// The method the object names beside the fingerprint (nodeTopologyPodsFingerprintMethod): only pods
// with exclusive resources, which for the scheduler means every Guaranteed pod (its memory is
// exclusive) and any pod that asks for an extended resource.
inline constexpr const char* kFingerprintMethod = "with-exclusive-resources";

// The fingerprint of the set of pods; their order does not matter.
std::string podsFingerprint(const std::vector<PodName>& pods);

}  // namespace vri::topology_export
