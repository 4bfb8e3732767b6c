// kubelet's memory manager checkpoint: its machine state computed as kubelet's static policy computes
// it, go-spew's text of it for the checksum, Go's JSON for the file (vri/kubelet_checkpoint_text.h).
#include "vri/kubelet_memory_checkpoint.h"

#include <algorithm>

#include "accounting/numa_memory.h"
#include "base/quote.h"
#include "vri/kubelet_checkpoint_text.h"

namespace vri {

namespace {

using kubelet_text::goJsonString;

std::string nodeList(std::vector<int> nodes) {
  std::sort(nodes.begin(), nodes.end());
  std::string out;
  for (int node : nodes) out += (out.empty() ? "" : ",") + std::to_string(node);
  return out;
}

// policy_static.go getDefaultMachineState: each NUMA node alone in its group; each hugepage pool a
// resource; regular memory is MemTotal less the pools and the reservation.
Result<std::map<int, KubeletNumaNodeState>> defaultMachineState(const std::vector<NumaNode>& nodes,
                                                                const KubeletReservedMemory& reserved) {
  std::map<int, KubeletNumaNodeState> state;
  for (const auto& entry : reserved) {
    const int node = entry.first;
    const bool exists = std::any_of(nodes.begin(), nodes.end(), [&](const NumaNode& n) { return n.id == node; });
    if (!exists)
      return Error::invalidArgument("reservedMemory names NUMA node " + std::to_string(node) +
                                    ", which this node does not have");
  }
  for (const NumaNode& node : nodes) {
    KubeletNumaNodeState& s = state[node.id];
    s.cells = {node.id};
    const auto reservedHere = reserved.find(node.id);
    const auto reservation = [&](const std::string& resource) -> uint64_t {
      if (reservedHere == reserved.end()) return 0;
      const auto r = reservedHere->second.find(resource);
      return r == reservedHere->second.end() ? 0 : r->second;
    };
    const auto table = [&](const std::string& resource, uint64_t total, uint64_t taken) -> Result<void> {
      const uint64_t systemReserved = reservation(resource);
      if (systemReserved + taken > total)
        return Error::invalidArgument("reservedMemory takes " + std::to_string(systemReserved) + " bytes of " +
                                      resource + " on NUMA node " + std::to_string(node.id) + ", which holds " +
                                      std::to_string(total - taken));
      const uint64_t allocatable = total - systemReserved - taken;
      s.memoryMap[resource] = KubeletMemoryTable{total, systemReserved, allocatable, 0, allocatable};
      return {};
    };
    uint64_t hugepageBytes = 0;
    for (const auto& [size, count] : node.hugepages) {
      VRI_TRY(table(memoryResourceName(size), size * count, 0));
      hugepageBytes += size * count;
    }
    VRI_TRY(table(memoryResourceName(kRegularMemory), node.memoryBytes, hugepageBytes));
  }
  return state;
}

std::string spewInts(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? " " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string jsonInts(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "]";
}

// go-spew's `%#v` (vri/kubelet_checkpoint.cc says how it prints): a pointer inside a map prints as
// `<*>` and its struct without a type; slices print their elements bare.
std::string spewText(const MemoryManagerCheckpoint& cp) {
  std::string out =
      "(*state.MemoryManagerCheckpoint){PolicyName:(string)" + cp.policyName + " MachineState:(state.NUMANodeMap)map[";
  bool first = true;
  for (const auto& [node, s] : cp.machineState) {
    out += std::string(first ? "" : " ") + std::to_string(node) + ":<*>{NumberOfAssignments:(int)" +
           std::to_string(s.assignments) + " MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[";
    first = false;
    bool firstTable = true;
    for (const auto& [resource, t] : s.memoryMap) {
      out += std::string(firstTable ? "" : " ") + resource + ":<*>{TotalMemSize:(uint64)" + std::to_string(t.total) +
             " SystemReserved:(uint64)" + std::to_string(t.systemReserved) + " Allocatable:(uint64)" +
             std::to_string(t.allocatable) + " Reserved:(uint64)" + std::to_string(t.reserved) + " Free:(uint64)" +
             std::to_string(t.free) + "}";
      firstTable = false;
    }
    out += "] Cells:([]int)" + spewInts(s.cells) + "}";
  }
  out += "] Entries:(state.ContainerMemoryAssignments)map[";
  first = true;
  for (const auto& [pod, containers] : cp.entries) {
    out += std::string(first ? "" : " ") + pod + ":map[";
    first = false;
    bool firstContainer = true;
    for (const auto& [container, blocks] : containers) {
      out += std::string(firstContainer ? "" : " ") + container + ":[";
      firstContainer = false;
      for (size_t i = 0; i < blocks.size(); ++i)
        out += std::string(i ? " " : "") + "{NUMAAffinity:([]int)" + spewInts(blocks[i].numaAffinity) +
               " Type:(v1.ResourceName)" + blocks[i].type + " Size:(uint64)" + std::to_string(blocks[i].size) + "}";
      out += "]";
    }
    out += "]";
  }
  return out + "] Checksum:(checksum.Checksum)0}";
}

Result<std::vector<int>> intList(const YAML::Node& node, const std::string& what) {
  std::vector<int> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) return Error::invalidArgument(what + " is not a list");
  for (const auto& element : node) {
    VRI_ASSIGN_OR_RETURN(uint64_t value, kubelet_text::unsignedNumber(element, what));
    if (value > 1024) return Error::invalidArgument(what + ": NUMA node " + std::to_string(value) + " is out of range");
    out.push_back(static_cast<int>(value));
  }
  return out;
}

Result<KubeletMemoryTable> tableOf(const YAML::Node& node, const std::string& what) {
  if (!node.IsMap()) return Error::invalidArgument(what + " is not an object");
  KubeletMemoryTable t;
  for (const auto& [key, field] : {std::pair{"total", &t.total},
                                   {"systemReserved", &t.systemReserved},
                                   {"allocatable", &t.allocatable},
                                   {"reserved", &t.reserved},
                                   {"free", &t.free}}) {
    if (const YAML::Node v = node[key]) {
      VRI_ASSIGN_OR_RETURN(*field, kubelet_text::unsignedNumber(v, what + "." + key));
    }
  }
  return t;
}

Result<std::map<int, KubeletNumaNodeState>> machineStateOf(const YAML::Node& node, const std::string& origin) {
  std::map<int, KubeletNumaNodeState> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsMap()) return Error::invalidArgument(origin + ": machineState is not an object");
  for (const auto& entry : node) {
    const std::string what = origin + ": machineState." + entry.first.Scalar();
    VRI_ASSIGN_OR_RETURN(uint64_t id, kubelet_text::unsignedNumber(entry.first, what + " (its NUMA node)"));
    if (id > 1024 || !entry.second.IsMap()) return Error::invalidArgument(what + " is not a NUMA node's state");
    KubeletNumaNodeState& s = out[static_cast<int>(id)];
    VRI_ASSIGN_OR_RETURN(uint64_t assignments, kubelet_text::unsignedNumber(entry.second["numberOfAssignments"],
                                                                            what + ".numberOfAssignments"));
    s.assignments = static_cast<int>(std::min<uint64_t>(assignments, 1 << 30));
    if (const YAML::Node map = entry.second["memoryMap"]) {
      if (!map.IsMap()) return Error::invalidArgument(what + ".memoryMap is not an object");
      for (const auto& table : map) {
        VRI_ASSIGN_OR_RETURN(s.memoryMap[table.first.Scalar()],
                             tableOf(table.second, what + ".memoryMap." + table.first.Scalar()));
      }
    }
    VRI_ASSIGN_OR_RETURN(s.cells, intList(entry.second["cells"], what + ".cells"));
  }
  return out;
}

Result<KubeletMemoryAssignments> entriesOf(const YAML::Node& node, const std::string& origin) {
  KubeletMemoryAssignments out;
  if (!node || node.IsNull()) return out;
  if (!node.IsMap()) return Error::invalidArgument(origin + ": entries is not an object");
  for (const auto& pod : node) {
    if (!pod.second.IsMap())
      return Error::invalidArgument(origin + ": entries of pod " + quoteForMessage(pod.first.Scalar()) +
                                    " is not an object of container to blocks");
    auto& containers = out[pod.first.Scalar()];
    for (const auto& container : pod.second) {
      const std::string what = origin + ": the blocks of " + quoteForMessage(container.first.Scalar());
      if (!container.second.IsSequence()) return Error::invalidArgument(what + " are not a list");
      auto& blocks = containers[container.first.Scalar()];
      for (const auto& b : container.second) {
        if (!b.IsMap()) return Error::invalidArgument(what + " hold something other than a block");
        KubeletMemoryBlock block;
        VRI_ASSIGN_OR_RETURN(block.numaAffinity, intList(b["numaAffinity"], what + ": numaAffinity"));
        VRI_ASSIGN_OR_RETURN(block.type, kubelet_text::stringMember(b, "type", what));
        VRI_ASSIGN_OR_RETURN(block.size, kubelet_text::unsignedNumber(b["size"], what + ": size"));
        blocks.push_back(std::move(block));
      }
    }
  }
  return out;
}

}  // namespace

Result<std::map<int, KubeletNumaNodeState>> kubeletMachineState(const std::vector<NumaNode>& nodes,
                                                                const KubeletReservedMemory& reserved,
                                                                const KubeletMemoryAssignments& entries) {
  VRI_ASSIGN_OR_RETURN(auto state, defaultMachineState(nodes, reserved));
  std::map<int, std::pair<std::vector<int>, std::string>> groupOf;  // node -> its group, and whose block made it
  for (const auto& [pod, containers] : entries) {
    for (const auto& [container, blocks] : containers) {
      const std::string whose = "pod " + pod + " container " + quoteForMessage(container);
      for (const KubeletMemoryBlock& block : blocks) {
        std::vector<int> group = block.numaAffinity;
        std::sort(group.begin(), group.end());
        uint64_t left = block.size;
        // validateState's walk: fill the group's nodes in order, as far as each has memory free.
        for (int node : block.numaAffinity) {
          const auto s = state.find(node);
          if (s == state.end())
            return Error::failedPrecondition(whose + ": its " + block.type + " lies on NUMA node " +
                                             std::to_string(node) + ", which this node does not have");
          const auto [known, inserted] = groupOf.try_emplace(node, group, whose);
          if (!inserted && known->second.first != group)
            return Error::failedPrecondition(
                "kubelet's memory manager keeps each NUMA node in one group, and NUMA node " + std::to_string(node) +
                " is in two: " + whose + " holds memory on nodes " + nodeList(group) + ", " + known->second.second +
                " on nodes " + nodeList(known->second.first));
          s->second.assignments++;
          s->second.cells = block.numaAffinity;
          const auto t = s->second.memoryMap.find(block.type);
          if (t == s->second.memoryMap.end())
            return Error::failedPrecondition(whose + ": NUMA node " + std::to_string(node) + " has no " + block.type);
          KubeletMemoryTable& table = t->second;
          if (left == 0 || table.free == 0) continue;
          const uint64_t taken = std::min(left, table.free);
          table.reserved += taken;
          table.free -= taken;
          left -= taken;
        }
      }
    }
  }
  return state;
}

uint32_t memoryManagerChecksum(const MemoryManagerCheckpoint& checkpoint) {
  return kubelet_text::fnv32a(spewText(checkpoint));
}

std::string encodeMemoryCheckpoint(const MemoryManagerCheckpoint& checkpoint) {
  std::string out = "{\"policyName\":" + goJsonString(checkpoint.policyName) + ",\"machineState\":{";
  bool first = true;
  for (const auto& [node, s] : checkpoint.machineState) {
    out += std::string(first ? "" : ",") + "\"" + std::to_string(node) +
           "\":{\"numberOfAssignments\":" + std::to_string(s.assignments) + ",\"memoryMap\":{";
    first = false;
    bool firstTable = true;
    for (const auto& [resource, t] : s.memoryMap) {
      out += std::string(firstTable ? "" : ",") + goJsonString(resource) + ":{\"total\":" + std::to_string(t.total) +
             ",\"systemReserved\":" + std::to_string(t.systemReserved) +
             ",\"allocatable\":" + std::to_string(t.allocatable) + ",\"reserved\":" + std::to_string(t.reserved) +
             ",\"free\":" + std::to_string(t.free) + "}";
      firstTable = false;
    }
    out += "},\"cells\":" + jsonInts(s.cells) + "}";
  }
  out += "}";
  // `entries,omitempty`: an empty map is left out.
  if (!checkpoint.entries.empty()) {
    out += ",\"entries\":{";
    first = true;
    for (const auto& [pod, containers] : checkpoint.entries) {
      out += std::string(first ? "" : ",") + goJsonString(pod) + ":{";
      first = false;
      bool firstContainer = true;
      for (const auto& [container, blocks] : containers) {
        out += std::string(firstContainer ? "" : ",") + goJsonString(container) + ":[";
        firstContainer = false;
        for (size_t i = 0; i < blocks.size(); ++i)
          out += std::string(i ? "," : "") + "{\"numaAffinity\":" + jsonInts(blocks[i].numaAffinity) +
                 ",\"type\":" + goJsonString(blocks[i].type) + ",\"size\":" + std::to_string(blocks[i].size) + "}";
        out += "]";
      }
      out += "}";
    }
    out += "}";
  }
  return out + ",\"checksum\":" + std::to_string(memoryManagerChecksum(checkpoint)) + "}";
}

Result<MemoryManagerCheckpoint> parseMemoryManagerCheckpoint(std::string_view text, const std::string& origin) {
  VRI_ASSIGN_OR_RETURN(YAML::Node root, kubelet_text::loadObject(text, origin));
  MemoryManagerCheckpoint cp;
  try {
    VRI_ASSIGN_OR_RETURN(cp.policyName, kubelet_text::stringMember(root, "policyName", origin));
    VRI_ASSIGN_OR_RETURN(cp.machineState, machineStateOf(root["machineState"], origin));
    VRI_ASSIGN_OR_RETURN(cp.entries, entriesOf(root["entries"], origin));
  } catch (const YAML::Exception& e) {  // a key that is not a scalar, and such
    return Error::invalidArgument(origin + ": " + e.what());
  }
  VRI_ASSIGN_OR_RETURN(cp.checksum, kubelet_text::checksumMember(root, origin));
  VRI_TRY(kubelet_text::verifyChecksum(cp.checksum, memoryManagerChecksum(cp), origin));
  return cp;
}

}  // namespace vri
