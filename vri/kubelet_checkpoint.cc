// kubelet's CPU manager checkpoint: go-spew's text of the checkpoint for the checksum, Go's JSON for
// the file, yaml-cpp (JSON is YAML) to read it.
#include "vri/kubelet_checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <charconv>

#include "base/quote.h"

namespace vri {

namespace {

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

uint32_t fnv32a(std::string_view bytes) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

// A JSON string as Go's encoding/json writes it (HTML characters escaped too).
std::string goJsonString(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == '<' || c == '>' || c == '&') {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xf];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

Result<YAML::Node> loadObject(std::string_view text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::invalidArgument(origin + ": not JSON: " + e.msg);
  }
  if (!root.IsMap()) return Error::invalidArgument(origin + ": want a JSON object");
  return root;
}

Result<std::string> stringMember(const YAML::Node& root, const char* key, const std::string& origin) {
  const YAML::Node node = root[key];
  if (!node) return std::string();
  if (!node.IsScalar()) return Error::invalidArgument(origin + ": " + key + " is not a string");
  return node.Scalar();
}

}  // namespace

uint32_t kubeletChecksum(const CpuManagerCheckpoint& checkpoint) { return fnv32a(spewText(checkpoint)); }

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
  VRI_ASSIGN_OR_RETURN(YAML::Node root, loadObject(text, origin));
  CpuManagerCheckpoint cp;
  VRI_ASSIGN_OR_RETURN(cp.policyName, stringMember(root, "policyName", origin));
  VRI_ASSIGN_OR_RETURN(cp.defaultCpuSet, stringMember(root, "defaultCpuSet", origin));
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
  if (const YAML::Node checksum = root["checksum"]) {
    const std::string digits = checksum.IsScalar() ? checksum.Scalar() : std::string();
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), cp.checksum);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
      return Error::invalidArgument(origin + ": checksum " + quoteForMessage(digits) + " is not a whole number");
  }
  if (cp.checksum != 0 && cp.checksum != kubeletChecksum(cp))
    return Error(ErrorCode::kDataLoss, origin + ": its checksum " + std::to_string(cp.checksum) +
                                           " is not its contents' (" + std::to_string(kubeletChecksum(cp)) +
                                           "): kubelet refuses it as corrupted");
  return cp;
}

Result<std::string> checkpointPolicyName(std::string_view text, const std::string& origin) {
  VRI_ASSIGN_OR_RETURN(YAML::Node root, loadObject(text, origin));
  return stringMember(root, "policyName", origin);
}

}  // namespace vri
