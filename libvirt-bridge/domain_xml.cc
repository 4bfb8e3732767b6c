#include "libvirt-bridge/domain_xml.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <set>

#include "base/amount_limits.h"
#include "base/quote.h"
#include "base/uuid.h"
#include "libvirt-bridge/libvirt_syntax.h"
#include "libvirt-bridge/vri_metadata_element.h"
#include "libvirt-bridge/xml_document.h"

namespace vri {

namespace {

Result<uint64_t> scaleUnit(uint64_t value, std::string unit, std::string_view what) {
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::pair<std::string_view, uint64_t> kUnits[] = {
      {"b", 1},          {"bytes", 1},        {"kb", 1000},
      {"k", 1024},       {"kib", 1024},       {"mb", 1000000},
      {"m", 1ULL << 20}, {"mib", 1ULL << 20}, {"gb", 1000000000ULL},
      {"g", 1ULL << 30}, {"gib", 1ULL << 30}, {"tb", 1000000000000ULL},
      {"t", 1ULL << 40}, {"tib", 1ULL << 40}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (value > kMaxMemoryBytes / factor)
        return Error::invalidArgument(std::string(what) + ": " + std::to_string(value) + " " + std::string(name) +
                                      " is beyond what any host holds (" + std::to_string(kMaxMemoryBytes) + " bytes)");
      return value * factor;
    }
  }
  return Error::invalidArgument(std::string(what) + ": unknown unit " + quoteForMessage(unit));
}

// <memory unit='KiB'>1048576</memory> and the like; KiB by default.
Result<uint64_t> sizeOf(xmlNodePtr node, std::string_view what, std::string_view text) {
  VRI_ASSIGN_OR_RETURN(uint64_t value, libvirtNumber<uint64_t>(text, what));
  return scaleUnit(value, attribute(node, "unit").value_or("KiB"), what);
}

Result<CpuSet> cpusetAttribute(xmlNodePtr node, std::string_view name, std::string_view what) {
  const auto text = attribute(node, name);
  if (!text) return Error::invalidArgument(std::string(what) + ": no " + std::string(name) + " attribute");
  // A number past any host VRI runs on is a CPU this host does not have, not a malformed list.
  for (size_t i = 0; i < text->size();) {
    size_t end = i;
    while (end < text->size() && std::isdigit(static_cast<unsigned char>((*text)[end]))) ++end;
    if (end > i && (end - i > 6 || std::stoi(text->substr(i, end - i)) >= CpuSet::kMaxCpus)) {
      return Error::invalidArgument(std::string(what) + ": " + (name == "nodeset" ? "NUMA node " : "CPU ") +
                                    text->substr(i, end - i) + " does not exist on this host");
    }
    i = end > i ? end : i + 1;
  }
  auto parsed = parseLibvirtBitmap(*text);
  if (!parsed.ok()) return std::move(parsed).context(std::string(what)).error();
  return parsed;
}

Result<uint32_t> unsignedAttribute(xmlNodePtr node, std::string_view name, std::string_view what) {
  const auto text = attribute(node, name);
  if (!text) return Error::invalidArgument(std::string(what) + ": no " + std::string(name) + " attribute");
  return parseLibvirtUnsigned(*text, std::string(what) + " " + std::string(name));
}

// The same, for an id VRI keeps in an int (vCPUs, guest cells): past INT_MAX is past any domain's count.
Result<int> intAttribute(xmlNodePtr node, std::string_view name, std::string_view what) {
  VRI_ASSIGN_OR_RETURN(uint32_t value, unsignedAttribute(node, name, what));
  if (value > static_cast<uint32_t>(std::numeric_limits<int>::max())) {
    return Error::invalidArgument(std::string(what) + ": " + std::string(name) + " " + std::to_string(value) +
                                  " is out of range");
  }
  return static_cast<int>(value);
}

// The pins under <cputune> or VRI's <placement> (same element names). In a
// placement mark, pool='shared' stands for a thread on the shared pool (an empty set).
Result<void> readPins(xmlNodePtr parent, std::map<int, CpuSet>& vcpus, std::optional<CpuSet>& emulator,
                      std::map<IothreadId, CpuSet>& iothreads, bool mark = false) {
  const auto cpusOf = [&](xmlNodePtr n, const std::string& what) -> Result<CpuSet> {
    if (mark && attribute(n, "pool") == "shared") return CpuSet{};
    return cpusetAttribute(n, "cpuset", what);
  };
  for (xmlNodePtr n = parent->children; n != nullptr; n = n->next) {
    if (isElement(n, "vcpupin")) {
      VRI_ASSIGN_OR_RETURN(int vcpu, intAttribute(n, "vcpu", "<vcpupin>"));
      VRI_ASSIGN_OR_RETURN(CpuSet cpus, cpusOf(n, "<vcpupin vcpu='" + std::to_string(vcpu) + "'>"));
      if (!vcpus.emplace(vcpu, cpus).second) {
        return Error::invalidArgument("<vcpupin>: vCPU " + std::to_string(vcpu) + " is pinned twice");
      }
    } else if (isElement(n, "emulatorpin")) {
      VRI_ASSIGN_OR_RETURN(emulator, cpusOf(n, "<emulatorpin>"));
    } else if (isElement(n, "iothreadpin")) {
      VRI_ASSIGN_OR_RETURN(IothreadId id, unsignedAttribute(n, "iothread", "<iothreadpin>"));
      if (id == 0) return Error::invalidArgument("<iothreadpin>: iothread id 0 must be positive");
      VRI_ASSIGN_OR_RETURN(CpuSet cpus, cpusOf(n, "<iothreadpin>"));
      iothreads[id] = cpus;
    }
  }
  return {};
}

Result<void> readCputune(xmlNodePtr cputune, DomainCputune& out) {
  VRI_TRY(readPins(cputune, out.vcpupins, out.emulatorpin, out.iothreadpins));
  if (xmlNodePtr n = childElement(cputune, "shares")) {
    VRI_ASSIGN_OR_RETURN(out.shares, libvirtNumber<uint64_t>(textOf(n), "<cputune><shares>"));
  }
  if (xmlNodePtr n = childElement(cputune, "period")) {
    VRI_ASSIGN_OR_RETURN(out.period, libvirtNumber<uint64_t>(textOf(n), "<cputune><period>"));
  }
  if (xmlNodePtr n = childElement(cputune, "quota")) {
    VRI_ASSIGN_OR_RETURN(out.quota, libvirtNumber<int64_t>(textOf(n), "<cputune><quota>"));
  }
  return {};
}

Result<void> readVcpus(xmlNodePtr domain, DomainXml& out) {
  xmlNodePtr vcpu = childElement(domain, "vcpu");
  if (vcpu == nullptr) {
    out.maxVcpus = out.currentVcpus = 1;  // libvirt's default
    return {};
  }
  VRI_ASSIGN_OR_RETURN(out.maxVcpus, libvirtNumber<int>(textOf(vcpu), "<vcpu>"));
  out.currentVcpus = out.maxVcpus;
  if (auto current = attribute(vcpu, "current")) {
    VRI_ASSIGN_OR_RETURN(out.currentVcpus, libvirtNumber<int>(*current, "<vcpu current>"));
  }
  if (out.maxVcpus < 1 || out.maxVcpus > 4096 || out.currentVcpus < 1 || out.currentVcpus > out.maxVcpus) {
    return Error::invalidArgument("<vcpu>: " + std::to_string(out.currentVcpus) + " of " +
                                  std::to_string(out.maxVcpus) + " vCPUs is out of range");
  }
  xmlNodePtr vcpus = childElement(domain, "vcpus");
  if (vcpus == nullptr) {
    for (int id = 0; id < out.currentVcpus; ++id) out.onlineVcpus.push_back(id);
    return {};
  }
  // Which vCPUs are online is libvirt's <vcpus> list, not the first `current` ids.
  std::set<int> seen;
  for (xmlNodePtr n = vcpus->children; n != nullptr; n = n->next) {
    if (!isElement(n, "vcpu")) continue;
    VRI_ASSIGN_OR_RETURN(int id, intAttribute(n, "id", "<vcpus><vcpu>"));
    if (id >= out.maxVcpus || !seen.insert(id).second) {
      return Error::invalidArgument("<vcpus><vcpu id='" + std::to_string(id) + "'>: " +
                                    (id >= out.maxVcpus ? "the domain has " + std::to_string(out.maxVcpus) + " vCPUs"
                                                        : std::string("listed twice")));
    }
    const std::string enabled = attribute(n, "enabled").value_or("yes");
    if (enabled != "yes" && enabled != "no") {
      return Error::invalidArgument("<vcpus><vcpu id='" + std::to_string(id) + "'>: enabled must be yes or no");
    }
    if (enabled == "yes") out.onlineVcpus.push_back(id);
  }
  std::sort(out.onlineVcpus.begin(), out.onlineVcpus.end());
  if (out.onlineVcpus.size() != static_cast<size_t>(out.currentVcpus)) {
    return Error::invalidArgument("<vcpus>: " + std::to_string(out.onlineVcpus.size()) + " vCPUs are enabled and " +
                                  "<vcpu current> says " + std::to_string(out.currentVcpus));
  }
  return {};
}

// <iothreads>N</iothreads> with <iothreadids>: the ids listed, and as many more
// as N asks numbered from 1 up past those taken (libvirt's rule).
Result<void> readIothreads(xmlNodePtr domain, DomainXml& out) {
  if (xmlNodePtr iothreads = childElement(domain, "iothreads")) {
    VRI_ASSIGN_OR_RETURN(out.iothreads, libvirtNumber<int>(textOf(iothreads), "<iothreads>"));
    if (out.iothreads < 0 || out.iothreads > 1024) return Error::invalidArgument("<iothreads>: out of range");
  }
  std::set<IothreadId> ids;
  if (xmlNodePtr listed = childElement(domain, "iothreadids")) {
    for (xmlNodePtr n = listed->children; n != nullptr; n = n->next) {
      if (!isElement(n, "iothread")) continue;
      VRI_ASSIGN_OR_RETURN(IothreadId id, unsignedAttribute(n, "id", "<iothreadids><iothread>"));
      if (id < 1 || !ids.insert(id).second) {
        return Error::invalidArgument("<iothreadids>: iothread id " + std::to_string(id) +
                                      (id < 1 ? " must be positive" : " is listed twice"));
      }
    }
  }
  if (ids.size() > static_cast<size_t>(out.iothreads)) out.iothreads = static_cast<int>(ids.size());
  for (IothreadId next = 1; ids.size() < static_cast<size_t>(out.iothreads); ++next) ids.insert(next);
  out.iothreadIds.assign(ids.begin(), ids.end());
  return {};
}

Result<void> readCpuTopology(xmlNodePtr domain, GuestCpuTopology& out) {
  xmlNodePtr topology = childElement(childElement(domain, "cpu"), "topology");
  if (topology == nullptr) return {};
  const auto field = [&](std::string_view name, int fallback) -> Result<int> {
    const auto text = attribute(topology, name);
    if (!text) return fallback;
    VRI_ASSIGN_OR_RETURN(int value, libvirtNumber<int>(*text, "<cpu><topology " + std::string(name) + ">"));
    if (value < 1 || value > 4096) {
      return Error::invalidArgument("<cpu><topology>: " + std::string(name) + " out of range");
    }
    return value;
  };
  VRI_ASSIGN_OR_RETURN(out.sockets, field("sockets", 1));
  VRI_ASSIGN_OR_RETURN(out.dies, field("dies", 1));
  VRI_ASSIGN_OR_RETURN(out.cores, field("cores", 1));
  VRI_ASSIGN_OR_RETURN(out.threads, field("threads", 1));
  return {};
}

Result<void> readMemory(xmlNodePtr domain, DomainXml& out) {
  xmlNodePtr memory = childElement(domain, "memory");
  if (memory == nullptr) return Error::invalidArgument("domain XML has no <memory>");
  VRI_ASSIGN_OR_RETURN(out.memoryBytes, sizeOf(memory, "<memory>", textOf(memory)));
  out.currentMemoryBytes = out.memoryBytes;
  if (xmlNodePtr current = childElement(domain, "currentMemory")) {
    VRI_ASSIGN_OR_RETURN(out.currentMemoryBytes, sizeOf(current, "<currentMemory>", textOf(current)));
  }
  if (out.memoryBytes == 0) return Error::invalidArgument("<memory>: a VM needs memory");
  if (xmlNodePtr hugepages = childElement(childElement(domain, "memoryBacking"), "hugepages")) {
    out.hugepages = true;
    for (xmlNodePtr page = hugepages->children; page != nullptr; page = page->next) {
      if (!isElement(page, "page")) continue;
      const auto size = attribute(page, "size");
      if (!size) return Error::invalidArgument("<hugepages><page>: no size attribute");
      DomainHugepage entry;
      VRI_ASSIGN_OR_RETURN(uint64_t value, libvirtNumber<uint64_t>(*size, "<hugepages><page size>"));
      VRI_ASSIGN_OR_RETURN(entry.sizeBytes,
                           scaleUnit(value, attribute(page, "unit").value_or("KiB"), "<hugepages><page>"));
      if (entry.sizeBytes == 0 || (entry.sizeBytes & (entry.sizeBytes - 1)) != 0) {
        return Error::invalidArgument("<hugepages><page>: not a page size: " + std::to_string(entry.sizeBytes));
      }
      if (attribute(page, "nodeset")) {
        VRI_ASSIGN_OR_RETURN(entry.cells, cpusetAttribute(page, "nodeset", "<hugepages><page>"));
      }
      out.hugepagePages.push_back(entry);
    }
  }
  return {};
}

Result<DomainNumatune> numatuneEntry(xmlNodePtr node, std::string_view what) {
  DomainNumatune numatune;
  numatune.mode = attribute(node, "mode").value_or("strict");
  if (numatune.mode != "strict" && numatune.mode != "preferred" && numatune.mode != "interleave" &&
      numatune.mode != "restrictive") {
    return Error::invalidArgument(std::string(what) + ": unknown mode " + quoteForMessage(numatune.mode));
  }
  if (attribute(node, "nodeset")) {
    VRI_ASSIGN_OR_RETURN(numatune.nodeset, cpusetAttribute(node, "nodeset", what));
  }
  return numatune;
}

Result<void> readNumatune(xmlNodePtr domain, DomainXml& out) {
  xmlNodePtr numatune = childElement(domain, "numatune");
  if (numatune == nullptr) return {};
  if (xmlNodePtr memory = childElement(numatune, "memory")) {
    VRI_ASSIGN_OR_RETURN(out.numatune, numatuneEntry(memory, "<numatune><memory>"));
  }
  for (xmlNodePtr n = numatune->children; n != nullptr; n = n->next) {
    if (!isElement(n, "memnode")) continue;
    VRI_ASSIGN_OR_RETURN(int cell, intAttribute(n, "cellid", "<numatune><memnode>"));
    VRI_ASSIGN_OR_RETURN(DomainNumatune entry, numatuneEntry(n, "<numatune><memnode>"));
    if (entry.nodeset.empty())
      return Error::invalidArgument("<numatune><memnode cellid='" + std::to_string(cell) + "'>: no nodeset");
    if (!out.memnodes.emplace(cell, entry).second) {
      return Error::invalidArgument("<numatune><memnode>: cell " + std::to_string(cell) + " is named twice");
    }
  }
  return {};
}

Result<void> readCells(xmlNodePtr domain, DomainXml& out) {
  xmlNodePtr numa = childElement(childElement(domain, "cpu"), "numa");
  if (numa == nullptr) return {};
  CpuSet seen_vcpus;
  for (xmlNodePtr n = numa->children; n != nullptr; n = n->next) {
    if (!isElement(n, "cell")) continue;
    DomainCell cell;
    cell.id = static_cast<int>(out.cells.size());  // libvirt numbers cells in order when id is absent
    if (attribute(n, "id")) {
      VRI_ASSIGN_OR_RETURN(cell.id, intAttribute(n, "id", "<cpu><numa><cell>"));
    }
    const std::string what = "<cpu><numa><cell id='" + std::to_string(cell.id) + "'>";
    if (attribute(n, "cpus")) {
      VRI_ASSIGN_OR_RETURN(cell.vcpus, cpusetAttribute(n, "cpus", what));
    }
    const auto memory = attribute(n, "memory");
    if (!memory) return Error::invalidArgument(what + ": no memory attribute");
    VRI_ASSIGN_OR_RETURN(cell.memoryBytes, sizeOf(n, what, *memory));
    if (cell.vcpus.intersects(seen_vcpus)) return Error::invalidArgument(what + ": vCPUs in two cells");
    seen_vcpus |= cell.vcpus;
    for (const DomainCell& other : out.cells) {
      if (other.id == cell.id) return Error::invalidArgument(what + ": cell id used twice");
    }
    out.cells.push_back(cell);
  }
  return {};
}

Result<void> readMemoryDevices(xmlNodePtr domain, DomainXml& out) {
  xmlNodePtr devices = childElement(domain, "devices");
  if (devices == nullptr) return {};
  for (xmlNodePtr n = devices->children; n != nullptr; n = n->next) {
    if (!isElement(n, "memory")) continue;
    DomainMemoryDevice device;
    device.model = attribute(n, "model").value_or("");
    // An SGX enclave page cache is the CPU's reserved memory, not the host's RAM: libvirt
    // leaves it out of <memory>, and nothing here books it.
    if (device.model == "sgx-epc") continue;
    const std::string what = "<memory model='" + device.model + "'>";
    xmlNodePtr target = childElement(n, "target");
    xmlNodePtr size = childElement(target, "size");
    if (size == nullptr) return Error::invalidArgument(what + ": no <target><size>");
    VRI_ASSIGN_OR_RETURN(device.sizeBytes, sizeOf(size, what, textOf(size)));
    if (xmlNodePtr node = childElement(target, "node")) {
      VRI_ASSIGN_OR_RETURN(int cell, libvirtNumber<int>(textOf(node), what + "<target><node>"));
      device.cell = cell;
    }
    xmlNodePtr source = childElement(n, "source");
    if (xmlNodePtr pagesize = childElement(source, "pagesize")) {
      VRI_ASSIGN_OR_RETURN(device.pageSizeBytes, sizeOf(pagesize, what, textOf(pagesize)));
    }
    if (xmlNodePtr nodemask = childElement(source, "nodemask")) {
      VRI_ASSIGN_OR_RETURN(device.nodemask, parseLibvirtBitmap(textOf(nodemask)));
    }
    // libvirt reads <source><path> for the file-backed models only; a dimm's is ignored (it is RAM).
    if (xmlNodePtr path = childElement(source, "path"); path != nullptr && device.fileBacked()) {
      device.sourcePath = textOf(path);
    }
    out.memoryDevices.push_back(device);
  }
  return {};
}

Result<void> readVriMetadata(xmlNodePtr domain, VriDomainMetadata& out) {
  xmlNodePtr vri = vriMetadataElementOf(domain);
  if (vri == nullptr) return {};
  const auto oneOf = [](xmlNodePtr node, std::string_view name,
                        std::initializer_list<std::string_view> allowed) -> Result<std::string> {
    const auto value = attribute(node, name);
    if (!value) return std::string();
    for (auto a : allowed) {
      if (*value == a) return *value;
    }
    std::string list;
    for (auto a : allowed) list += (list.empty() ? "" : "|") + std::string(a);
    return Error::invalidArgument("<vri:cpu " + std::string(name) + "=" + quoteForMessage(*value) + ">: must be " +
                                  list);
  };
  if (xmlNodePtr cpu = childElement(vri, "cpu")) {
    VRI_ASSIGN_OR_RETURN(out.cpuPolicy, oneOf(cpu, "policy", {"shared", "dedicated", "mixed"}));
    VRI_ASSIGN_OR_RETURN(out.threadPolicy, oneOf(cpu, "thread-policy", {"prefer", "isolate", "require"}));
    VRI_ASSIGN_OR_RETURN(out.emulatorThreads, oneOf(cpu, "emulator-threads", {"shared", "isolate"}));
    VRI_ASSIGN_OR_RETURN(out.iothreadPolicy, oneOf(cpu, "iothreads", {"shared", "isolate"}));
    if (attribute(cpu, "dedicated-vcpus")) {
      VRI_ASSIGN_OR_RETURN(out.dedicatedVcpus, cpusetAttribute(cpu, "dedicated-vcpus", "<vri:cpu>"));
    }
    if (out.cpuPolicy == "mixed" && out.dedicatedVcpus.empty()) {
      return Error::invalidArgument("<vri:cpu policy='mixed'>: dedicated-vcpus lists no vCPU");
    }
  }
  if (xmlNodePtr placement = childElement(vri, "placement")) {
    VriPlacementMark mark;
    VRI_TRY(readPins(placement, mark.vcpupins, mark.emulatorpin, mark.iothreadpins, true));
    out.placement = std::move(mark);
  }
  return {};
}

Result<std::string> validUuid(std::string text) {
  if (!isUuid(text)) return Error::invalidArgument("<uuid>: not a UUID: " + quoteForMessage(text));
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

Result<void> validateDomainName(std::string_view name) {
  if (name.empty()) return Error::invalidArgument("domain XML has no <name>");
  if (name.size() > 256) return Error::invalidArgument("<name>: longer than 256 bytes");
  if (name == "." || name == ".." || name.find('/') != std::string_view::npos) {
    return Error::invalidArgument("<name>: " + quoteForMessage(name) + " cannot be a domain name");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return Error::invalidArgument("<name>: control character in " + quoteForMessage(name));
  }
  return {};
}

namespace {

// A thread the mark puts on the shared pool (an empty set) may hold any pins: the pool moves.
bool markedPin(const CpuSet& mark, const CpuSet& pin) { return mark.empty() || mark == pin; }

template <typename Id>
bool markedPins(const std::map<Id, CpuSet>& mark, const std::map<Id, CpuSet>& pins) {
  return mark.size() == pins.size() &&
         std::equal(mark.begin(), mark.end(), pins.begin(),
                    [](const auto& m, const auto& p) { return m.first == p.first && markedPin(m.second, p.second); });
}

}  // namespace

bool DomainXml::pinsAreVris() const {
  if (!vri.placement) return false;
  const VriPlacementMark& mark = *vri.placement;
  const bool emulator = mark.emulatorpin.has_value() == cputune.emulatorpin.has_value() &&
                        (!mark.emulatorpin || markedPin(*mark.emulatorpin, *cputune.emulatorpin));
  return emulator && markedPins(mark.vcpupins, cputune.vcpupins) && markedPins(mark.iothreadpins, cputune.iothreadpins);
}

Result<DomainXml> parseDomainXml(std::string_view xml) {
  VRI_ASSIGN_OR_RETURN(XmlDocument doc, XmlDocument::parse(xml, "domain XML"));
  xmlNodePtr domain = doc.root();
  if (!isElement(domain, "domain")) {
    return Error::invalidArgument("domain XML: the root element is <" + std::string(nodeName(domain)) +
                                  ">, not <domain>");
  }
  DomainXml out;
  out.name = textOf(childElement(domain, "name"));
  VRI_TRY(validateDomainName(out.name));
  const std::string context = "domain " + quoteForMessage(out.name);
  const auto in = [&](Result<void> r) { return std::move(r).context(context); };
  const auto fail = [&](Error e) { return Error(e.addContext(context)); };
  if (xmlNodePtr uuid = childElement(domain, "uuid")) {
    auto valid = validUuid(textOf(uuid));
    if (!valid.ok()) return fail(valid.error());
    out.uuid = *valid;
  } else {
    return fail(Error::invalidArgument("no <uuid>"));
  }
  if (auto id = attribute(domain, "id"); id && *id != "-1") {
    auto parsed = libvirtNumber<int>(*id, "<domain id>");
    if (!parsed.ok()) return fail(parsed.error());
    out.id = *parsed;
  }
  VRI_TRY(in(readVcpus(domain, out)));
  VRI_TRY(in(readCpuTopology(domain, out.cpuTopology)));
  if (xmlNodePtr cputune = childElement(domain, "cputune")) VRI_TRY(in(readCputune(cputune, out.cputune)));
  VRI_TRY(in(readMemory(domain, out)));
  VRI_TRY(in(readNumatune(domain, out)));
  VRI_TRY(in(readCells(domain, out)));
  VRI_TRY(in(readMemoryDevices(domain, out)));
  VRI_TRY(in(readIothreads(domain, out)));
  VRI_TRY(in(readVriMetadata(domain, out.vri)));
  for (const auto& [vcpu, cpus] : out.cputune.vcpupins) {
    if (vcpu >= out.maxVcpus) {
      return fail(Error::invalidArgument("<vcpupin vcpu='" + std::to_string(vcpu) + "'>: the domain has " +
                                         std::to_string(out.maxVcpus) + " vCPUs"));
    }
  }
  return out;
}

}  // namespace vri
