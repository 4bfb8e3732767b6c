#include "topology-export/pods_fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace vri::topology_export {

std::string podsFingerprint(const std::vector<PodName>& pods) {
  std::vector<uint64_t> hashes;
  hashes.reserve(pods.size());
  for (const PodName& pod : pods) {
    const XXH64_hash_t seed = XXH64(pod.name_space.data(), pod.name_space.size(), 0);
    hashes.push_back(XXH64(pod.name.data(), pod.name.size(), seed));
  }
  std::sort(hashes.begin(), hashes.end());
  std::vector<unsigned char> bytes;
  bytes.reserve(hashes.size() * 8);
  for (uint64_t hash : hashes) {
    for (int shift = 0; shift < 64; shift += 8) bytes.push_back(static_cast<unsigned char>(hash >> shift));
  }
  const uint64_t sum = XXH64(bytes.data(), bytes.size(), 0);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  return std::string("pfp0v001") + hex;
}

}  // namespace vri::topology_export
