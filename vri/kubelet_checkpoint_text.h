// What kubelet's checkpoint files share, whichever manager writes them: Go's JSON for the file, read
// back with yaml-cpp (JSON is YAML), and the checksum kubelet verifies, FNV-32a over go-spew's `%#v`
// text of the checkpoint (k8s.io/kubernetes/pkg/util/hash.DeepHashObject: sorted keys, no methods).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace vri::kubelet_text {

uint32_t fnv32a(std::string_view bytes);

// A JSON string as Go's encoding/json writes it (HTML characters escaped too).
std::string goJsonString(std::string_view text);

// The file's top-level object; anything else is refused naming `origin`.
Result<YAML::Node> loadObject(std::string_view text, const std::string& origin);

// A member that must be a string when present; absent: empty.
Result<std::string> stringMember(const YAML::Node& object, const char* key, const std::string& origin);

// A whole number, as Go's encoding/json reads one into an unsigned field; `what` names it in errors.
Result<uint64_t> unsignedNumber(const YAML::Node& node, const std::string& what);

// The checkpoint's "checksum" member (0 when absent, as kubelet reads an older file).
Result<uint64_t> checksumMember(const YAML::Node& object, const std::string& origin);

// As kubelet verifies a file it reads: `stored` 0 (an older file) or the contents' own `computed`;
// any other is refused as kubelet refuses it ("checkpoint is corrupted").
Result<void> verifyChecksum(uint64_t stored, uint32_t computed, const std::string& origin);

}  // namespace vri::kubelet_text
