#include "accounting/ledger_records.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <sstream>
#include <type_traits>
#include <vector>

#include "base/amount_limits.h"
#include "base/quote.h"
#include "base/text.h"

namespace vri {

int exclusiveCpusFor(const PodSpec& pod, const ContainerSpec& container) {
  if (pod.qos != QosClass::kGuaranteed) return 0;
  if (container.cpuRequestMilli <= 0 || container.cpuRequestMilli % 1000 != 0) return 0;
  if (container.cpuLimitMilli != container.cpuRequestMilli) return 0;
  return static_cast<int>(container.cpuRequestMilli / 1000);
}

uint64_t podMemoryBytes(const PodRecord& pod) {
  uint64_t total = pod.spec.overheadMemoryBytes;
  for (const auto& [name, c] : pod.containers) {
    total += c.spec.memoryLimitBytes.value_or(c.spec.memoryRequestBytes.value_or(0));
  }
  return total;
}

namespace {

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '%' || c == '\n' || c == '|' || c == '=' || static_cast<unsigned char>(c) < 0x20) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

Result<std::string> unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) return Error::invalidArgument("bad escape in ledger record");
    const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc() || end != text.data() + i + 3) return Error::invalidArgument("bad escape in ledger record");
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

template <typename T>
Result<T> number(std::string_view text, std::string_view what) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Error::invalidArgument("ledger record: bad " + std::string(what) + " " + quoteForMessage(text));
  }
  return value;
}

std::string optionalNumber(const std::optional<uint64_t>& value) { return value ? std::to_string(*value) : "-"; }

Result<std::optional<uint64_t>> parseOptional(std::string_view text, std::string_view what) {
  if (text == "-") return std::optional<uint64_t>();
  VRI_ASSIGN_OR_RETURN(uint64_t value, number<uint64_t>(text, what));
  return std::optional<uint64_t>(value);
}

template <typename T>
std::string intList(const std::vector<T>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

template <typename T = int>
Result<std::vector<T>> parseIntList(std::string_view text, std::string_view what) {
  std::vector<T> values;
  if (text.empty()) return values;
  for (std::string_view part : splitOn(text, ',')) {
    VRI_ASSIGN_OR_RETURN(T value, number<T>(part, what));
    values.push_back(value);
  }
  return values;
}

// "0:3,4:-1" (id:cpu), and back. A list without ids ("3,-1": what earlier
// versions stored) numbers its entries from `firstId`.
template <typename Id>
std::string idMap(const std::map<Id, int>& values) {
  std::string out;
  for (const auto& [id, value] : values)
    out += (out.empty() ? "" : ",") + std::to_string(id) + ":" + std::to_string(value);
  return out;
}

template <typename Id>
Result<std::map<Id, int>> parseIdMap(std::string_view text, Id firstId, std::string_view what) {
  std::map<Id, int> values;
  if (text.empty()) return values;
  Id next = firstId;
  for (std::string_view part : splitOn(text, ',')) {
    const size_t colon = part.find(':');
    Id id = next;
    if (colon != std::string_view::npos) {
      VRI_ASSIGN_OR_RETURN(id, number<Id>(part.substr(0, colon), what));
      part = part.substr(colon + 1);
    }
    VRI_ASSIGN_OR_RETURN(int value, number<int>(part, what));
    bool negative = false;
    if constexpr (std::is_signed_v<Id>) negative = id < 0;
    if (negative || !values.emplace(id, value).second) {
      return Error::invalidArgument("ledger record: bad or repeated id in " + std::string(what) + " list");
    }
    next = id + 1;
  }
  return values;
}

// key=value lines into a multimap-like list.
Result<std::vector<std::pair<std::string, std::string>>> fields(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view line : splitOn(text, '\n')) {
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return Error::invalidArgument("ledger record: line without '='");
    VRI_ASSIGN_OR_RETURN(std::string value, unescape(line.substr(eq + 1)));
    out.emplace_back(std::string(line.substr(0, eq)), std::move(value));
  }
  return out;
}

Result<QosClass> parseQos(std::string_view text) {
  for (QosClass qos : {QosClass::kGuaranteed, QosClass::kBurstable, QosClass::kBestEffort}) {
    if (qosClassName(qos) == text) return qos;
  }
  return Error::invalidArgument("ledger record: bad QoS class " + quoteForMessage(text));
}

// "2097152:4194304,1073741824:1073741824": page size and limit, both in bytes.
std::string encodeHugepageLimits(const std::map<uint64_t, uint64_t>& limits) {
  std::string out;
  for (const auto& [size, bytes] : limits)
    out += (out.empty() ? "" : ",") + std::to_string(size) + ":" + std::to_string(bytes);
  return out;
}

Result<std::map<uint64_t, uint64_t>> decodeHugepageLimits(std::string_view text) {
  std::map<uint64_t, uint64_t> limits;
  if (text.empty()) return limits;
  for (std::string_view entry : splitOn(text, ',')) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos)
      return Error::invalidArgument("ledger record: bad hugepage limit " + quoteForMessage(entry));
    VRI_ASSIGN_OR_RETURN(const uint64_t size, number<uint64_t>(entry.substr(0, colon), "hugepage size"));
    VRI_ASSIGN_OR_RETURN(const uint64_t bytes, number<uint64_t>(entry.substr(colon + 1), "hugepage limit"));
    limits[size] = bytes;
  }
  return limits;
}

}  // namespace

std::string encodePod(const PodRecord& pod) {
  std::ostringstream out;
  out << "uid=" << escape(pod.spec.uid) << "\nname=" << escape(pod.spec.name) << "\nqos=" << qosClassName(pod.spec.qos)
      << "\noverhead_cpu=" << pod.spec.overheadCpuMilli << "\noverhead_memory=" << pod.spec.overheadMemoryBytes << "\n";
  if (pod.spec.outsideKubeletTree) out << "outside_kubelet_tree=1\n";
  if (!pod.sandboxId.empty()) out << "sandbox=" << escape(pod.sandboxId) << "\n";
  for (const auto& [name, c] : pod.containers) {
    // Escaped twice: the line is unescaped once as a whole, then each field.
    out << "container=" << escape(escape(c.spec.name)) << "|" << escape(escape(c.spec.id)) << "|"
        << (c.spec.init ? 1 : 0) << "|" << c.spec.cpuRequestMilli << "|" << c.spec.cpuLimitMilli << "|"
        << optionalNumber(c.spec.memoryLimitBytes) << "|" << optionalNumber(c.spec.memoryRequestBytes) << "|"
        << c.exclusive.format() << "|" << encodeMemoryBlocks(c.memory) << "|"
        << encodeHugepageLimits(c.spec.hugepageLimits) << "\n";
  }
  return out.str();
}

Result<PodRecord> decodePod(std::string_view text) {
  PodRecord pod;
  VRI_ASSIGN_OR_RETURN(auto lines, fields(text));
  for (const auto& [key, value] : lines) {
    if (key == "uid") {
      pod.spec.uid = value;
    } else if (key == "name") {
      pod.spec.name = value;
    } else if (key == "qos") {
      VRI_ASSIGN_OR_RETURN(pod.spec.qos, parseQos(value));
    } else if (key == "overhead_cpu") {
      VRI_ASSIGN_OR_RETURN(pod.spec.overheadCpuMilli, number<int64_t>(value, "overhead"));
    } else if (key == "overhead_memory") {
      VRI_ASSIGN_OR_RETURN(pod.spec.overheadMemoryBytes, number<uint64_t>(value, "overhead"));
    } else if (key == "outside_kubelet_tree") {
      if (value != "1")
        return Error::invalidArgument("ledger record: bad outside_kubelet_tree " + quoteForMessage(value));
      pod.spec.outsideKubeletTree = true;
    } else if (key == "sandbox") {
      pod.sandboxId = value;
    } else if (key == "container") {
      const auto parts = splitOn(value, '|');
      if (parts.size() < 8 || parts.size() > 10) {
        return Error::invalidArgument("ledger record: container line has " + std::to_string(parts.size()) + " fields");
      }
      ContainerRecord c;
      VRI_ASSIGN_OR_RETURN(c.spec.name, unescape(parts[0]));
      VRI_ASSIGN_OR_RETURN(c.spec.id, unescape(parts[1]));
      c.spec.init = parts[2] == "1";
      VRI_ASSIGN_OR_RETURN(c.spec.cpuRequestMilli, number<int64_t>(parts[3], "CPU request"));
      VRI_ASSIGN_OR_RETURN(c.spec.cpuLimitMilli, number<int64_t>(parts[4], "CPU limit"));
      VRI_ASSIGN_OR_RETURN(c.spec.memoryLimitBytes, parseOptional(parts[5], "memory limit"));
      VRI_ASSIGN_OR_RETURN(c.spec.memoryRequestBytes, parseOptional(parts[6], "memory request"));
      VRI_ASSIGN_OR_RETURN(c.exclusive, CpuSet::parse(parts[7]));
      if (parts.size() >= 9) {
        VRI_ASSIGN_OR_RETURN(c.memory, decodeMemoryBlocks(parts[8]));
      }
      if (parts.size() == 10) {  // schema version 2
        VRI_ASSIGN_OR_RETURN(c.spec.hugepageLimits, decodeHugepageLimits(parts[9]));
      }
      pod.containers[c.spec.name] = std::move(c);
    } else {
      return Error::invalidArgument("ledger record: unknown pod field " + quoteForMessage(key));
    }
  }
  VRI_TRY(validatePodUid(pod.spec.uid));
  if (!pod.sandboxId.empty()) VRI_TRY(validateContainerId(pod.sandboxId).context("sandbox id"));
  return pod;
}

std::vector<VmMemoryPart> memoryPartsOf(const VmSpec& vm) {
  if (!vm.memoryParts.empty()) return vm.memoryParts;
  if (vm.memoryBytes == 0) return {};
  return {VmMemoryPart{VmMemoryPart::kNoCell, vm.memoryBytes, vm.hugepageSize, vm.strictNumaNodes}};
}

Result<void> validateMemoryParts(const VmSpec& vm) {
  const std::string who = "VM " + (vm.cpu.name.empty() ? vm.uuid : vm.cpu.name) + ": ";
  uint64_t sum = 0;
  for (const VmMemoryPart& part : vm.memoryParts) {
    if (part.guestCell != VmMemoryPart::kNoCell &&
        std::none_of(vm.cells.begin(), vm.cells.end(), [&](const GuestCell& c) { return c.id == part.guestCell; })) {
      return Error::invalidArgument(who + "memory_parts.guest_cell: memory of guest cell " +
                                    std::to_string(part.guestCell) + ", which the VM does not have (cells)");
    }
    VRI_ASSIGN_OR_RETURN(sum, addBytes(who + "memory_parts.bytes: their sum", sum, part.bytes));
  }
  if (!vm.memoryParts.empty() && sum != vm.memoryBytes) {
    return Error::invalidArgument(who + "memory_parts: they add up to " + std::to_string(sum) +
                                  " bytes, not memory_bytes " + std::to_string(vm.memoryBytes));
  }
  for (size_t i = 0; i < vm.cells.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (vm.cells[i].id == vm.cells[j].id || vm.cells[i].vcpus.intersects(vm.cells[j].vcpus))
        return Error::invalidArgument(who + "guest cells " + std::to_string(vm.cells[j].id) + " and " +
                                      std::to_string(vm.cells[i].id) + " overlap");
    }
  }
  return {};
}

namespace {

// "0:0-1;1:2-3" (cell:vCPUs) and "cell:bytes:page:nodes" parts, and back.
std::string encodeCells(const std::vector<GuestCell>& cells) {
  std::string out;
  for (const GuestCell& c : cells) out += (out.empty() ? "" : ";") + std::to_string(c.id) + ":" + c.vcpus.format();
  return out;
}

std::string encodeParts(const std::vector<VmMemoryPart>& parts) {
  std::string out;
  for (const VmMemoryPart& p : parts) {
    out += (out.empty() ? "" : ";") + std::to_string(p.guestCell) + ":" + std::to_string(p.bytes) + ":" +
           std::to_string(p.pageSize) + ":" + intList(p.hostNodes) + (p.device ? ":device" : "");
  }
  return out;
}

std::string encodeCellNodes(const std::map<int, CpuSet>& cells) {
  std::string out;
  for (const auto& [cell, nodes] : cells) out += (out.empty() ? "" : ";") + std::to_string(cell) + ":" + nodes.format();
  return out;
}

Result<std::vector<GuestCell>> decodeCells(std::string_view text) {
  std::vector<GuestCell> cells;
  if (text.empty()) return cells;
  for (std::string_view entry : splitOn(text, ';')) {
    const auto parts = splitOn(entry, ':');
    if (parts.size() != 2) return Error::invalidArgument("ledger record: bad guest cell " + quoteForMessage(entry));
    GuestCell cell;
    VRI_ASSIGN_OR_RETURN(cell.id, number<int>(parts[0], "guest cell"));
    VRI_ASSIGN_OR_RETURN(cell.vcpus, CpuSet::parse(parts[1]));
    cells.push_back(cell);
  }
  return cells;
}

Result<std::vector<VmMemoryPart>> decodeParts(std::string_view text) {
  std::vector<VmMemoryPart> out;
  if (text.empty()) return out;
  for (std::string_view entry : splitOn(text, ';')) {
    const auto fields = splitOn(entry, ':');
    // A fifth field marks a memory device's part (records written before it have four).
    if (fields.size() != 4 && !(fields.size() == 5 && fields[4] == "device"))
      return Error::invalidArgument("ledger record: bad memory part " + quoteForMessage(entry));
    VmMemoryPart part;
    VRI_ASSIGN_OR_RETURN(part.guestCell, number<int>(fields[0], "guest cell"));
    VRI_ASSIGN_OR_RETURN(part.bytes, number<uint64_t>(fields[1], "memory part"));
    VRI_ASSIGN_OR_RETURN(part.pageSize, number<uint64_t>(fields[2], "page size"));
    VRI_ASSIGN_OR_RETURN(part.hostNodes, parseIntList(fields[3], "NUMA node"));
    part.device = fields.size() == 5;
    out.push_back(std::move(part));
  }
  return out;
}

Result<std::map<int, CpuSet>> decodeCellNodes(std::string_view text) {
  std::map<int, CpuSet> out;
  if (text.empty()) return out;
  for (std::string_view entry : splitOn(text, ';')) {
    const auto parts = splitOn(entry, ':');
    if (parts.size() != 2) return Error::invalidArgument("ledger record: bad cell nodes " + quoteForMessage(entry));
    VRI_ASSIGN_OR_RETURN(int cell, number<int>(parts[0], "guest cell"));
    VRI_ASSIGN_OR_RETURN(out[cell], CpuSet::parse(parts[1]));
  }
  return out;
}

}  // namespace

std::string encodeVm(const VmRecord& vm) {
  std::ostringstream out;
  const VmCpuRequest& cpu = vm.spec.cpu;
  const VmCpuPlacement& p = vm.placement;
  out << "uuid=" << escape(vm.spec.uuid) << "\nname=" << escape(cpu.name) << "\nvcpus=" << cpu.vcpus
      << "\nonline_vcpus=" << intList(cpu.onlineVcpus) << "\nmax_vcpus=" << cpu.maxVcpus
      << "\niothread_ids=" << intList(cpu.iothreadIds) << "\ncpu_policy=" << static_cast<int>(cpu.cpuPolicy)
      << "\nmixed=" << intList(cpu.mixedDedicatedVcpus) << "\nguest_threads=" << cpu.guestThreadsPerCore
      << "\nthread_policy=" << static_cast<int>(cpu.threadPolicy)
      << "\nemulator_policy=" << static_cast<int>(cpu.emulatorPolicy) << "\niothreads=" << cpu.iothreads
      << "\niothread_policy=" << static_cast<int>(cpu.iothreadPolicy) << "\nnuma=" << intList(cpu.preferredNumaNodes)
      << "\npins=" << intList(cpu.pinnedVcpuCpus) << "\nmemory=" << vm.spec.memoryBytes
      << "\nvcpu_cpus=" << idMap(p.vcpuCpus) << "\nemulator_cpus=" << p.emulatorCpus.format()
      << "\niothread_cpus=" << idMap(p.iothreadCpus) << "\nexclusive=" << p.exclusive.format()
      << "\nheld_back=" << p.heldBack.format() << "\nhugepage_size=" << vm.spec.hugepageSize
      << "\nstrict_numa=" << intList(vm.spec.strictNumaNodes) << "\nmemory_blocks=" << encodeMemoryBlocks(vm.memory)
      << "\ndefined=" << (vm.defined ? 1 : 0) << "\ncells=" << encodeCells(vm.spec.cells)
      << "\nmemory_parts=" << encodeParts(vm.spec.memoryParts) << "\ncell_nodes=" << encodeCellNodes(p.cellNodes)
      << "\n";
  return out.str();
}

Result<VmRecord> decodeVm(std::string_view text) {
  VmRecord vm;
  VmCpuRequest& cpu = vm.spec.cpu;
  VmCpuPlacement& p = vm.placement;
  VRI_ASSIGN_OR_RETURN(auto lines, fields(text));
  const auto enumIn = [](std::string_view value, int max, std::string_view what) -> Result<int> {
    VRI_ASSIGN_OR_RETURN(int v, number<int>(value, what));
    if (v < 0 || v > max) return Error::invalidArgument("ledger record: bad " + std::string(what));
    return v;
  };
  for (const auto& [key, value] : lines) {
    if (key == "uuid") {
      vm.spec.uuid = value;
    } else if (key == "name") {
      cpu.name = value;
    } else if (key == "vcpus") {
      VRI_ASSIGN_OR_RETURN(cpu.vcpus, number<int>(value, "vCPU count"));
    } else if (key == "online_vcpus") {
      VRI_ASSIGN_OR_RETURN(cpu.onlineVcpus, parseIntList(value, "vCPU id"));
    } else if (key == "max_vcpus") {
      VRI_ASSIGN_OR_RETURN(cpu.maxVcpus, number<int>(value, "vCPU id count"));
    } else if (key == "iothread_ids") {
      VRI_ASSIGN_OR_RETURN(cpu.iothreadIds, parseIntList<IothreadId>(value, "iothread id"));
    } else if (key == "cpu_policy") {
      VRI_ASSIGN_OR_RETURN(int v, enumIn(value, 2, "cpu policy"));
      cpu.cpuPolicy = static_cast<VmCpuPolicy>(v);
    } else if (key == "mixed") {
      VRI_ASSIGN_OR_RETURN(cpu.mixedDedicatedVcpus, parseIntList(value, "vCPU"));
    } else if (key == "guest_threads") {
      VRI_ASSIGN_OR_RETURN(cpu.guestThreadsPerCore, number<int>(value, "guest threads"));
    } else if (key == "thread_policy") {
      VRI_ASSIGN_OR_RETURN(int v, enumIn(value, 2, "thread policy"));
      cpu.threadPolicy = static_cast<ThreadPolicy>(v);
    } else if (key == "emulator_policy") {
      VRI_ASSIGN_OR_RETURN(int v, enumIn(value, 1, "emulator policy"));
      cpu.emulatorPolicy = static_cast<HelperThreadPolicy>(v);
    } else if (key == "iothreads") {
      VRI_ASSIGN_OR_RETURN(cpu.iothreads, number<int>(value, "iothreads"));
    } else if (key == "iothread_policy") {
      VRI_ASSIGN_OR_RETURN(int v, enumIn(value, 1, "iothread policy"));
      cpu.iothreadPolicy = static_cast<HelperThreadPolicy>(v);
    } else if (key == "numa") {
      VRI_ASSIGN_OR_RETURN(cpu.preferredNumaNodes, parseIntList(value, "NUMA node"));
    } else if (key == "pins") {
      VRI_ASSIGN_OR_RETURN(cpu.pinnedVcpuCpus, parseIntList(value, "vCPU pin"));
    } else if (key == "memory") {
      VRI_ASSIGN_OR_RETURN(vm.spec.memoryBytes, number<uint64_t>(value, "memory"));
    } else if (key == "vcpu_cpus") {
      VRI_ASSIGN_OR_RETURN(p.vcpuCpus, parseIdMap(value, 0, "vCPU placement"));
    } else if (key == "emulator_cpus") {
      VRI_ASSIGN_OR_RETURN(p.emulatorCpus, CpuSet::parse(value));
    } else if (key == "iothread_cpus") {
      VRI_ASSIGN_OR_RETURN(p.iothreadCpus, parseIdMap<IothreadId>(value, 1, "iothread placement"));
    } else if (key == "exclusive") {
      VRI_ASSIGN_OR_RETURN(p.exclusive, CpuSet::parse(value));
    } else if (key == "held_back") {
      VRI_ASSIGN_OR_RETURN(p.heldBack, CpuSet::parse(value));
    } else if (key == "hugepage_size") {
      VRI_ASSIGN_OR_RETURN(vm.spec.hugepageSize, number<uint64_t>(value, "hugepage size"));
    } else if (key == "strict_numa") {
      VRI_ASSIGN_OR_RETURN(vm.spec.strictNumaNodes, parseIntList(value, "NUMA node"));
    } else if (key == "defined") {
      vm.defined = value == "1";
    } else if (key == "cells") {
      VRI_ASSIGN_OR_RETURN(vm.spec.cells, decodeCells(value));
    } else if (key == "memory_parts") {
      VRI_ASSIGN_OR_RETURN(vm.spec.memoryParts, decodeParts(value));
    } else if (key == "cell_nodes") {
      VRI_ASSIGN_OR_RETURN(p.cellNodes, decodeCellNodes(value));
    } else if (key == "memory_blocks") {
      VRI_ASSIGN_OR_RETURN(vm.memory, decodeMemoryBlocks(value));
    } else {
      return Error::invalidArgument("ledger record: unknown VM field " + quoteForMessage(key));
    }
  }
  if (vm.spec.uuid.empty()) return Error::invalidArgument("ledger record: VM without a UUID");
  p.mems = NumaMemory::mems(vm.memory);  // derived, not stored
  return vm;
}

std::string encodeMemoryBlocks(const MemoryBlocks& blocks) {
  std::string out;
  for (const auto& [node, resources] : blocks) {
    for (const auto& [resource, bytes] : resources) {
      out += (out.empty() ? "" : ";") + std::to_string(node) + ":" + std::to_string(resource) + ":" +
             std::to_string(bytes);
    }
  }
  return out;
}

Result<MemoryBlocks> decodeMemoryBlocks(std::string_view text) {
  MemoryBlocks blocks;
  if (text.empty()) return blocks;
  for (std::string_view entry : splitOn(text, ';')) {
    const auto parts = splitOn(entry, ':');
    if (parts.size() != 3) return Error::invalidArgument("ledger record: bad memory block " + quoteForMessage(entry));
    VRI_ASSIGN_OR_RETURN(int node, number<int>(parts[0], "NUMA node"));
    VRI_ASSIGN_OR_RETURN(uint64_t resource, number<uint64_t>(parts[1], "memory resource"));
    VRI_ASSIGN_OR_RETURN(uint64_t bytes, number<uint64_t>(parts[2], "memory block"));
    blocks[node][resource] = bytes;
  }
  return blocks;
}

std::string vmDisplayName(const VmSpec& vm) { return "VM " + (vm.cpu.name.empty() ? vm.uuid : vm.cpu.name); }

}  // namespace vri
