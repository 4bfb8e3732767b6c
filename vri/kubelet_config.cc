// kubelet's configuration file read with yaml-cpp (YAML, and JSON as its subset), compared with vrid's.
#include "vri/kubelet_config.h"

#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <set>

#include "base/owned_path.h"
#include "base/quote.h"
#include "vri/kubelet_checkpoint.h"

namespace vri {

namespace {

// kubelet's files are a few KiB; anything far larger is not one.
constexpr size_t kMaxFileBytes = 1 << 20;

Result<std::string> scalar(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) return Error::invalidArgument(field + ": want a single value");
  return node.Scalar();
}

Result<bool> boolean(const YAML::Node& node, const std::string& field) {
  VRI_ASSIGN_OR_RETURN(std::string text, scalar(node, field));
  if (text == "true") return true;
  if (text == "false") return false;
  return Error::invalidArgument(field + ": want true or false, got " + quoteForMessage(text));
}

Result<Quantity> quantity(const YAML::Node& node, const std::string& field) {
  VRI_ASSIGN_OR_RETURN(std::string text, scalar(node, field));
  return Quantity::parse(text).context(field);
}

// systemReserved / kubeReserved: a map of resource name to quantity.
Result<void> reservation(const YAML::Node& node, const std::string& field, Quantity* cpu, Quantity* memory) {
  if (!node) return {};
  if (!node.IsMap()) return Error::invalidArgument(field + ": want a map of resource to quantity");
  if (const YAML::Node value = node["cpu"]) {
    VRI_ASSIGN_OR_RETURN(*cpu, quantity(value, field + ".cpu"));
  }
  if (const YAML::Node value = node["memory"]) {
    VRI_ASSIGN_OR_RETURN(*memory, quantity(value, field + ".memory"));
  }
  return {};
}

// reservedMemory: a list of {numaNode, limits: {resource: quantity}}, each node and resource once.
Result<KubeletReservedMemory> reservedMemoryOf(const YAML::Node& node) {
  KubeletReservedMemory out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) return Error::invalidArgument("reservedMemory: want a list of {numaNode, limits}");
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string where = "reservedMemory[" + std::to_string(i) + "]";
    const YAML::Node entry = node[i];
    if (!entry.IsMap() || !entry["numaNode"] || !entry["limits"] || !entry["limits"].IsMap())
      return Error::invalidArgument(where + ": want {numaNode: N, limits: {memory: Q}}");
    VRI_ASSIGN_OR_RETURN(Quantity numa, quantity(entry["numaNode"], where + ".numaNode"));
    if (numa.milliValue() % 1000 != 0 || numa.value() < 0 || numa.value() > 1024)
      return Error::invalidArgument(where + ".numaNode: want a NUMA node's number, got " + numa.toString());
    auto& limits = out[static_cast<int>(numa.value())];
    for (const auto& limit : entry["limits"]) {
      const std::string resource = limit.first.Scalar();
      if (resource != "memory" && !resource.starts_with("hugepages-"))
        return Error::invalidArgument(where + ".limits: " + quoteForMessage(resource) +
                                      " is neither memory nor hugepages-<size>");
      VRI_ASSIGN_OR_RETURN(Quantity amount, quantity(limit.second, where + ".limits." + resource));
      if (amount.value() <= 0) return Error::invalidArgument(where + ".limits." + resource + ": may not be zero");
      if (!limits.emplace(resource, static_cast<uint64_t>(amount.value())).second)
        return Error::invalidArgument(where + ": NUMA node " + numa.toString() + "'s " + resource +
                                      " is reserved twice");
    }
  }
  return out;
}

Result<KubeletSettings> settingsOf(const YAML::Node& root) {
  if (!root.IsMap()) return Error::invalidArgument("want a KubeletConfiguration, a map");
  const YAML::Node kind = root["kind"];
  if (!kind || !kind.IsScalar() || kind.Scalar() != "KubeletConfiguration")
    return Error::invalidArgument("kind is not KubeletConfiguration");
  const YAML::Node api = root["apiVersion"];
  if (!api || !api.IsScalar() || api.Scalar() != "kubelet.config.k8s.io/v1beta1")
    return Error::invalidArgument("apiVersion is not kubelet.config.k8s.io/v1beta1");

  KubeletSettings s;
  if (const YAML::Node v = root["reservedSystemCPUs"]) {
    VRI_ASSIGN_OR_RETURN(std::string text, scalar(v, "reservedSystemCPUs"));
    if (!text.empty()) {
      VRI_ASSIGN_OR_RETURN(s.reservedSystemCpus, CpuSet::parse(text).context("reservedSystemCPUs"));
    }
  }
  VRI_TRY(reservation(root["systemReserved"], "systemReserved", &s.systemReservedCpu, &s.systemReservedMemory));
  VRI_TRY(reservation(root["kubeReserved"], "kubeReserved", &s.kubeReservedCpu, &s.kubeReservedMemory));
  // kubelet's default evictionHard holds memory.available 100Mi; a file that sets evictionHard
  // replaces the whole map (each signal it leaves out is 0), unless mergeDefaultEvictionSettings.
  s.evictionHardMemory = Quantity::fromValue(100 << 20, Quantity::Format::kBinarySI);
  s.evictionHardMemoryText = "100Mi (kubelet's default)";
  bool mergeDefaults = false;
  if (const YAML::Node v = root["mergeDefaultEvictionSettings"]) {
    VRI_ASSIGN_OR_RETURN(mergeDefaults, boolean(v, "mergeDefaultEvictionSettings"));
  }
  if (const YAML::Node eviction = root["evictionHard"]) {
    if (!eviction.IsMap()) return Error::invalidArgument("evictionHard: want a map of signal to threshold");
    if (!mergeDefaults) {
      s.evictionHardMemory = Quantity::fromValue(0);
      s.evictionHardMemoryText = "unset";
    }
    if (const YAML::Node v = eviction["memory.available"]) {
      VRI_ASSIGN_OR_RETURN(std::string text, scalar(v, "evictionHard.memory.available"));
      s.evictionHardMemoryText = text;
      if (text.ends_with("%")) {
        s.evictionHardMemory.reset();
      } else {
        VRI_ASSIGN_OR_RETURN(s.evictionHardMemory, Quantity::parse(text).context("evictionHard.memory.available"));
      }
    }
  }
  const auto text = [&](const char* field, std::string* out) -> Result<void> {
    if (const YAML::Node v = root[field]) {
      VRI_ASSIGN_OR_RETURN(*out, scalar(v, field));
    }
    return {};
  };
  VRI_ASSIGN_OR_RETURN(s.reservedMemory, reservedMemoryOf(root["reservedMemory"]));
  VRI_TRY(text("cpuManagerPolicy", &s.cpuManagerPolicy));
  VRI_TRY(text("memoryManagerPolicy", &s.memoryManagerPolicy));
  VRI_TRY(text("topologyManagerPolicy", &s.topologyManagerPolicy));
  VRI_TRY(text("topologyManagerScope", &s.topologyManagerScope));
  VRI_TRY(text("cgroupRoot", &s.cgroupRoot));
  if (s.cgroupRoot.empty()) s.cgroupRoot = "/";
  if (const YAML::Node options = root["topologyManagerPolicyOptions"]) {
    if (!options.IsMap()) return Error::invalidArgument("topologyManagerPolicyOptions: want a map");
    if (const YAML::Node v = options["prefer-closest-numa-nodes"]) {
      VRI_ASSIGN_OR_RETURN(s.preferClosestNumaNodes,
                           boolean(v, "topologyManagerPolicyOptions.prefer-closest-numa-nodes"));
    }
  }
  if (const YAML::Node v = root["cgroupsPerQOS"]) {
    VRI_ASSIGN_OR_RETURN(s.cgroupsPerQos, boolean(v, "cgroupsPerQOS"));
  }
  return s;
}

// yaml-cpp keeps every entry of a map with a repeated key and its lookup answers the first, while
// kubelet's decoder takes the last: a file with one would make vrid agree with a value kubelet
// does not use. Refused, as kubelet's strict decoding refuses it.
Result<void> refuseDuplicateKeys(const YAML::Node& node, const std::string& where) {
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      VRI_TRY(refuseDuplicateKeys(node[i], where + "[" + std::to_string(i) + "]"));
  }
  if (!node.IsMap()) return {};
  std::set<std::string> keys;
  for (const auto& entry : node) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string("<not a scalar>");
    const std::string field = where.empty() ? key : where + "." + key;
    if (!keys.insert(key).second) {
      return Error::invalidArgument(quoteForMessage(field) + " is given twice; kubelet takes the last, give it once");
    }
    VRI_TRY(refuseDuplicateKeys(entry.second, field));
  }
  return {};
}

std::string cpusText(const std::optional<CpuSet>& cpus) { return cpus ? cpus->format() : std::string("unset"); }

}  // namespace

Result<KubeletSettings> parseKubeletConfig(std::string_view text, const std::string& origin) {
  if (text.size() > kMaxFileBytes)
    return Error::invalidArgument(origin + ": larger than " + std::to_string(kMaxFileBytes) + " bytes");
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return Error::invalidArgument(origin + ": not YAML: " + e.what());
  }
  try {
    VRI_TRY(refuseDuplicateKeys(root, "").context(origin));
    return settingsOf(root).context(origin);
  } catch (const YAML::Exception& e) {  // a map with a key that is not a scalar, and such
    return Error::invalidArgument(origin + ": " + e.what());
  }
}

std::vector<std::string> kubeletMismatches(const DaemonConfig& config, const KubeletSettings& kubelet) {
  std::vector<std::string> out;
  const auto differ = [&](const std::string& kubeletField, const std::string& kubeletValue,
                          const std::string& vridOption, const std::string& vridValue) {
    out.push_back("kubelet's " + kubeletField + " is " + kubeletValue + ", vrid's " + vridOption + " is " + vridValue);
  };
  const auto quantities = [&](const char* field, const Quantity& k, const char* option, const Quantity& v) {
    if (k != v) differ(field, k.toString(), option, v.toString());
  };
  if (kubelet.reservedSystemCpus != config.reservedCpus.cpus)
    differ("reservedSystemCPUs", cpusText(kubelet.reservedSystemCpus), "reserved_cpus",
           cpusText(config.reservedCpus.cpus));
  const NodeReservations& r = config.reservations;
  quantities("systemReserved.cpu", kubelet.systemReservedCpu, "system_reserved_cpu", r.systemReservedCpu);
  quantities("kubeReserved.cpu", kubelet.kubeReservedCpu, "kube_reserved_cpu", r.kubeReservedCpu);
  quantities("systemReserved.memory", kubelet.systemReservedMemory, "system_reserved_memory", r.systemReservedMemory);
  quantities("kubeReserved.memory", kubelet.kubeReservedMemory, "kube_reserved_memory", r.kubeReservedMemory);
  if (!kubelet.evictionHardMemory) {
    out.push_back("kubelet's evictionHard memory.available is " + kubelet.evictionHardMemoryText +
                  ", a share of the node's memory: vrid's eviction_hard_memory is an amount; give kubelet one");
  } else if (*kubelet.evictionHardMemory != r.evictionHardMemory) {
    differ("evictionHard memory.available", kubelet.evictionHardMemoryText, "eviction_hard_memory",
           r.evictionHardMemory.toString());
  }
  if (kubelet.cpuManagerPolicy != "none")
    out.push_back("kubelet's cpuManagerPolicy is " + quoteForMessage(kubelet.cpuManagerPolicy) +
                  ": VRI places the CPUs, so kubelet's must be none");
  if (kubelet.memoryManagerPolicy != "None")
    out.push_back("kubelet's memoryManagerPolicy is " + quoteForMessage(kubelet.memoryManagerPolicy) +
                  ": VRI places NUMA memory, so kubelet's must be None");
  const std::string policy(topologyPolicyName(config.topologyManager.policy));
  if (kubelet.topologyManagerPolicy != policy)
    differ("topologyManagerPolicy", quoteForMessage(kubelet.topologyManagerPolicy), "topology_manager_policy", policy);
  const std::string scope = config.topologyScope == TopologyScope::kPod ? "pod" : "container";
  if (kubelet.topologyManagerScope != scope)
    differ("topologyManagerScope", quoteForMessage(kubelet.topologyManagerScope), "topology_manager_scope", scope);
  if (kubelet.preferClosestNumaNodes != config.topologyManager.preferClosestNumaNodes)
    differ("topologyManagerPolicyOptions prefer-closest-numa-nodes", kubelet.preferClosestNumaNodes ? "true" : "false",
           "prefer_closest_numa_nodes", config.topologyManager.preferClosestNumaNodes ? "true" : "false");
  if (!kubelet.cgroupsPerQos)
    out.push_back("kubelet's cgroupsPerQOS is false: VRI places pods in kubelet's QoS cgroups, so it must be true");
  const std::string root = "/" + config.layout.kubeletParent.str();
  const std::string kubeletRoot = kubelet.cgroupRoot.size() > 1 && kubelet.cgroupRoot.ends_with("/")
                                      ? kubelet.cgroupRoot.substr(0, kubelet.cgroupRoot.size() - 1)
                                      : kubelet.cgroupRoot;
  if (kubeletRoot != root) differ("cgroupRoot", quoteForMessage(kubelet.cgroupRoot), "kubelet_cgroup_root", root);
  return out;
}

std::string takeoverSteps(const DaemonConfig& config) {
  const std::string file =
      config.kubeletConfig.empty() ? std::string("kubelet's configuration file") : config.kubeletConfig;
  const std::string root = config.kubeletRootDir.empty() ? std::string("/var/lib/kubelet") : config.kubeletRootDir;
  return "To take the node over with its pods running: stop kubelet; in " + file +
         " set cpuManagerPolicy: none and memoryManagerPolicy: None; remove " + root + "/cpu_manager_state and " +
         root +
         "/memory_manager_state; with memoryManagerPolicy Static before, set pin_guaranteed_memory = true in vrid's "
         "configuration, so that VRI binds Guaranteed pods' memory as kubelet did; start vrid, which adopts every "
         "running container on the CPUs and memory nodes it holds; point kubelet at vri-cri-shim or enable "
         "vri-nri-plugin; start kubelet (docs/operating.md, "
         "\"Taking a node over from kubelet's CPU manager\")";
}

Result<void> checkKubeletConfig(const DaemonConfig& config) {
  if (config.kubeletConfig.empty()) return {};
  // Read as vrid's own configuration is: what kubelet reserves decides what vrid admits.
  VRI_ASSIGN_OR_RETURN(std::string text, readOwnedFile(config.kubeletConfig, "kubelet_config", kMaxFileBytes));
  VRI_ASSIGN_OR_RETURN(KubeletSettings kubelet,
                       parseKubeletConfig(text, config.kubeletConfig).context("kubelet_config"));
  const std::vector<std::string> mismatches = kubeletMismatches(config, kubelet);
  if (mismatches.empty()) return {};
  std::string message = "kubelet_config " + config.kubeletConfig + " disagrees with vrid's configuration (" +
                        std::to_string(mismatches.size()) + "): ";
  for (size_t i = 0; i < mismatches.size(); ++i) message += (i ? "; " : "") + mismatches[i];
  // kubelet's own managers hold the node: the differences are the procedure's second step, not a typo.
  if (kubelet.cpuManagerPolicy != "none" || kubelet.memoryManagerPolicy != "None")
    return Error::failedPrecondition(message + ". " + takeoverSteps(config));
  return Error::failedPrecondition(message + ". Set both alike: vrid admits pods against what kubelet reserves");
}

Result<void> checkKubeletCheckpoints(const DaemonConfig& config) {
  if (config.kubeletRootDir.empty()) return {};
  struct Manager {
    const char* file;
    const char* none;  // the policy that leaves the node to VRI, as kubelet spells it
    const char* what;
  };
  for (const Manager& m : {Manager{"cpu_manager_state", "none", "CPU manager"},
                           Manager{"memory_manager_state", "None", "memory manager"}}) {
    const std::string path = config.kubeletRootDir + "/" + m.file;
    if (::access(path.c_str(), F_OK) != 0) continue;
    VRI_ASSIGN_OR_RETURN(std::string text,
                         readOwnedFile(path, std::string("kubelet's ") + m.what + " checkpoint", kMaxFileBytes));
    VRI_ASSIGN_OR_RETURN(std::string policy, checkpointPolicyName(text, path).context("kubelet_root_dir"));
    if (policy.empty() || policy == m.none) continue;
    return Error::failedPrecondition(
        "kubelet's " + std::string(m.what) + " holds this node: its checkpoint " + path + " says policy " +
        quoteForMessage(policy) + " (kubelet started with that policy, or VRI handed the node back to it), and " +
        "kubelet would refuse to start with policy " + m.none + " while it is there. " + takeoverSteps(config));
  }
  return {};
}

}  // namespace vri
