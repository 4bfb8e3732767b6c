#include "libvirt-bridge/cputune_writer.h"

#include <memory>

#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/libvirt_syntax.h"
#include "libvirt-bridge/vri_metadata_element.h"
#include "libvirt-bridge/xml_document.h"

namespace vri {

namespace {

const xmlChar* text(std::string_view s) { return reinterpret_cast<const xmlChar*>(s.data()); }

xmlNodePtr ensureChild(xmlNodePtr parent, const char* name) {
  if (xmlNodePtr existing = childElement(parent, name)) return existing;
  return xmlNewChild(parent, nullptr, text(name), nullptr);
}

void removeChildren(xmlNodePtr parent, std::initializer_list<std::string_view> names) {
  xmlNodePtr n = parent->children;
  while (n != nullptr) {
    xmlNodePtr next = n->next;
    for (auto name : names) {
      if (isElement(n, name)) {
        xmlUnlinkNode(n);
        xmlFreeNode(n);
        break;
      }
    }
    n = next;
  }
}

void setAttribute(xmlNodePtr node, const char* name, const std::string& value) {
  xmlSetProp(node, text(name), text(value.c_str()));
}

// <cputune>'s vcpupin, emulatorpin and iothreadpin children.
void addPins(xmlNodePtr parent, const VmPins& pins) {
  for (const auto& [vcpu, cpus] : pins.vcpus) {
    xmlNodePtr pin = xmlNewChild(parent, nullptr, text("vcpupin"), nullptr);
    setAttribute(pin, "vcpu", std::to_string(vcpu));
    setAttribute(pin, "cpuset", cpus.format());
  }
  xmlNodePtr emulator = xmlNewChild(parent, nullptr, text("emulatorpin"), nullptr);
  setAttribute(emulator, "cpuset", pins.emulator.format());
  for (const auto& [id, cpus] : pins.iothreads) {
    xmlNodePtr pin = xmlNewChild(parent, nullptr, text("iothreadpin"), nullptr);
    setAttribute(pin, "iothread", std::to_string(id));
    setAttribute(pin, "cpuset", cpus.format());
  }
}

// One pin of VRI's placement record: its CPUs, or pool='shared' for a thread on the shared pool.
void setMarkedCpus(xmlNodePtr pin, const CpuSet& cpus) {
  if (cpus.empty()) {
    setAttribute(pin, "pool", "shared");
  } else {
    setAttribute(pin, "cpuset", cpus.format());
  }
}

// <vri:placement>'s children.
void addMark(xmlNodePtr parent, xmlNsPtr ns, const VriPlacementMark& mark) {
  for (const auto& [vcpu, cpus] : mark.vcpupins) {
    xmlNodePtr pin = xmlNewChild(parent, ns, text("vcpupin"), nullptr);
    setAttribute(pin, "vcpu", std::to_string(vcpu));
    setMarkedCpus(pin, cpus);
  }
  if (mark.emulatorpin) setMarkedCpus(xmlNewChild(parent, ns, text("emulatorpin"), nullptr), *mark.emulatorpin);
  for (const auto& [id, cpus] : mark.iothreadpins) {
    xmlNodePtr pin = xmlNewChild(parent, ns, text("iothreadpin"), nullptr);
    setAttribute(pin, "iothread", std::to_string(id));
    setMarkedCpus(pin, cpus);
  }
}

// Whether a <memnode> is cell `cell`'s, its cellid read as the domain's parser reads it: "007"
// and "+0" name cells 7 and 0, and a second <memnode> for them would make the definition invalid.
bool namesCell(xmlNodePtr memnode, int cell) {
  const auto text = attribute(memnode, "cellid");
  if (!text) return false;
  const auto value = parseLibvirtUnsigned(*text, "cellid");
  return value.ok() && static_cast<int64_t>(*value) == cell;
}

// VRI's element in the domain's <metadata>, made when the domain has none.
xmlNodePtr vriElement(xmlNodePtr domain) {
  if (xmlNodePtr existing = vriMetadataElementOf(domain)) return existing;
  xmlNodePtr vri = xmlNewChild(ensureChild(domain, "metadata"), nullptr, text("domain"), nullptr);
  xmlNsPtr ns = xmlNewNs(vri, text(std::string(kVriXmlNamespace).c_str()), text(std::string(kVriXmlPrefix).c_str()));
  xmlSetNs(vri, ns);
  return vri;
}

// <vri:placement><vri:own-numatune> records the <numatune> the domain had before VRI first wrote
// one (a copy of it; empty when it had none), so that VRI's can be taken out again when the domain
// stops. Unlinked from the document here: the caller puts it under the new <vri:placement>.
// VRI's <vri:placement> in the domain, or null.
xmlNodePtr vriPlacementOf(xmlNodePtr domain) {
  xmlNodePtr vri = vriMetadataElementOf(domain);
  return vri != nullptr ? childElement(vri, "placement") : nullptr;
}

// Its <vri:own-numatune> record, or null.
xmlNodePtr ownNumatuneRecordIn(xmlNodePtr domain) {
  xmlNodePtr placement = vriPlacementOf(domain);
  return placement != nullptr ? childElement(placement, "own-numatune") : nullptr;
}

xmlNodePtr takeOwnNumatuneRecord(xmlNodePtr domain) {
  xmlNodePtr record = ownNumatuneRecordIn(domain);
  if (record != nullptr) xmlUnlinkNode(record);
  return record;
}

// `element` and its descendants in no namespace, declarations dropped: the domain's own elements
// as libvirt reads them. (libvirt gives each element of VRI's metadata VRI's namespace, and a copy
// out of it keeps a declaration of it.)
void outOfNamespaces(xmlNodePtr element) {
  xmlSetNs(element, nullptr);
  for (xmlAttrPtr a = element->properties; a != nullptr; a = a->next) a->ns = nullptr;  // none left dangling
  if (element->nsDef != nullptr) {
    xmlFreeNsList(element->nsDef);
    element->nsDef = nullptr;
  }
  for (xmlNodePtr n = element->children; n != nullptr; n = n->next) {
    if (n->type == XML_ELEMENT_NODE) outOfNamespaces(n);
  }
}

xmlNodePtr newOwnNumatuneRecord(xmlDocPtr doc, xmlNodePtr domain) {
  xmlNodePtr record = xmlNewDocNode(doc, nullptr, text("own-numatune"), nullptr);
  if (xmlNodePtr numatune = childElement(domain, "numatune")) xmlAddChild(record, xmlDocCopyNode(numatune, doc, 1));
  return record;
}

}  // namespace

VriPlacementMark placementMark(const VmPins& pins) {
  VriPlacementMark mark{pins.vcpus, pins.emulator, pins.iothreads};
  for (auto& [vcpu, cpus] : mark.vcpupins) {
    if (pins.sharedVcpus.contains(vcpu)) cpus = {};
  }
  if (pins.sharedEmulator) mark.emulatorpin = CpuSet{};
  for (auto& [id, cpus] : mark.iothreadpins) {
    if (pins.sharedIothreads.contains(id)) cpus = {};
  }
  return mark;
}

Result<std::string> writeVriPins(std::string_view domainXml, const VmPins& pins) {
  VRI_ASSIGN_OR_RETURN(XmlDocument doc, XmlDocument::parse(domainXml, "domain XML"));
  xmlNodePtr domain = doc.root();
  if (!isElement(domain, "domain")) return Error::invalidArgument("domain XML: the root element is not <domain>");
  for (const auto& [vcpu, cpus] : pins.vcpus) {
    if (cpus.empty()) return Error::invalidArgument("domain XML: vCPU " + std::to_string(vcpu) + " pinned to no CPU");
  }

  // Taken before <numatune> changes: the domain's own, recorded at VRI's first write and kept after.
  xmlNodePtr own_numatune = takeOwnNumatuneRecord(domain);
  if (own_numatune == nullptr && !pins.mems.empty()) own_numatune = newOwnNumatuneRecord(doc.get(), domain);

  xmlNodePtr cputune = ensureChild(domain, "cputune");
  removeChildren(cputune, {"vcpupin", "emulatorpin", "iothreadpin"});
  addPins(cputune, pins);

  if (!pins.mems.empty()) {
    // The domain's own mode stays (restrictive stays restrictive); without one, strict.
    xmlNodePtr numatune = ensureChild(domain, "numatune");
    xmlNodePtr memory = ensureChild(numatune, "memory");
    if (!attribute(memory, "mode")) setAttribute(memory, "mode", "strict");
    // Preferred memory over several nodes is one node to the kernel's MPOL_PREFERRED (several only
    // with libvirt 9.3's MPOL_PREFERRED_MANY; Debian 12 has 9.0). VRI books the memory on all the
    // nodes it writes, so it is confined there: restrictive, which binds it by the cgroup alone,
    // as vrid's own cgroup writes do.
    if (attribute(memory, "mode") == "preferred" && pins.mems.count() > 1) {
      setAttribute(memory, "mode", "restrictive");
      for (xmlNodePtr n = numatune->children; n != nullptr; n = n->next) {
        if (isElement(n, "memnode")) setAttribute(n, "mode", "restrictive");
      }
    }
    // Under <memory mode='restrictive'> libvirt accepts only restrictive memnodes.
    const char* memnode_mode = attribute(memory, "mode") == "restrictive" ? "restrictive" : "strict";
    setAttribute(memory, "nodeset", pins.mems.format());
    xmlUnsetProp(memory, text("placement"));
    // Each guest cell's memory where VRI placed it.
    for (const auto& [cell, nodes] : pins.cellNodes) {
      xmlNodePtr memnode = nullptr;
      for (xmlNodePtr n = numatune->children; n != nullptr && memnode == nullptr; n = n->next) {
        if (isElement(n, "memnode") && namesCell(n, cell)) memnode = n;
      }
      if (memnode == nullptr) {
        memnode = xmlNewChild(numatune, nullptr, text("memnode"), nullptr);
        setAttribute(memnode, "cellid", std::to_string(cell));
      }
      // A preferred memnode of several nodes is refused as the whole guest's is: strict (or
      // restrictive, as above) on the nodes VRI booked.
      if (!attribute(memnode, "mode") || (attribute(memnode, "mode") == "preferred" && nodes.count() > 1))
        setAttribute(memnode, "mode", memnode_mode);
      setAttribute(memnode, "nodeset", nodes.format());
    }
  }

  xmlNodePtr vri = vriElement(domain);
  removeChildren(vri, {"placement"});
  xmlNodePtr placement = xmlNewChild(vri, vri->ns, text("placement"), nullptr);
  addMark(placement, vri->ns, placementMark(pins));
  if (own_numatune != nullptr) {
    xmlAddChild(placement, own_numatune);
    xmlSetNs(own_numatune, vri->ns);
  }
  return doc.serialize();
}

Result<std::string> withoutVriPins(std::string_view domainXml) {
  VRI_ASSIGN_OR_RETURN(XmlDocument doc, XmlDocument::parse(domainXml, "domain XML"));
  xmlNodePtr domain = doc.root();
  if (!isElement(domain, "domain")) return Error::invalidArgument("domain XML: the root element is not <domain>");
  xmlNodePtr placement = vriPlacementOf(domain);
  if (placement == nullptr) return Error::failedPrecondition("domain XML: no placement of VRI's to take out");

  if (xmlNodePtr cputune = childElement(domain, "cputune")) {
    removeChildren(cputune, {"vcpupin", "emulatorpin", "iothreadpin"});
    bool empty = true;
    for (xmlNodePtr n = cputune->children; n != nullptr && empty; n = n->next) empty = n->type != XML_ELEMENT_NODE;
    if (empty) {
      xmlUnlinkNode(cputune);
      xmlFreeNode(cputune);
    }
  }
  // A definition VRI wrote before it kept the record: its <numatune> stays, as there is no telling
  // which parts were the domain's own.
  if (xmlNodePtr own = childElement(placement, "own-numatune")) {
    removeChildren(domain, {"numatune"});
    if (xmlNodePtr numatune = childElement(own, "numatune")) {
      xmlNodePtr copy = xmlDocCopyNode(numatune, doc.get(), 1);
      outOfNamespaces(copy);
      xmlAddChild(domain, copy);
    }
  }
  xmlUnlinkNode(placement);
  xmlFreeNode(placement);
  return doc.serialize();
}

std::string vriMetadataElement(const VriDomainMetadata& metadata) {
  // Every value is a keyword or a CPU list: nothing to escape.
  std::string cpu;
  const auto add = [&](const char* name, const std::string& value) {
    if (!value.empty()) cpu += std::string(" ") + name + "='" + value + "'";
  };
  add("policy", metadata.cpuPolicy);
  if (metadata.cpuPolicy == "mixed") add("dedicated-vcpus", metadata.dedicatedVcpus.format());
  add("thread-policy", metadata.threadPolicy);
  add("emulator-threads", metadata.emulatorThreads);
  add("iothreads", metadata.iothreadPolicy);
  std::string out = "<domain><cpu" + cpu + "/>";
  if (metadata.placement) {
    const VriPlacementMark& mark = *metadata.placement;
    out += "<placement>";
    const auto where = [](const CpuSet& cpus) {
      return cpus.empty() ? std::string("pool='shared'") : "cpuset='" + cpus.format() + "'";
    };
    for (const auto& [vcpu, cpus] : mark.vcpupins) {
      out += "<vcpupin vcpu='" + std::to_string(vcpu) + "' " + where(cpus) + "/>";
    }
    if (mark.emulatorpin) out += "<emulatorpin " + where(*mark.emulatorpin) + "/>";
    for (const auto& [id, cpus] : mark.iothreadpins) {
      out += "<iothreadpin iothread='" + std::to_string(id) + "' " + where(cpus) + "/>";
    }
    out += metadata.ownNumatuneRecord + "</placement>";
  }
  return out + "</domain>";
}

Result<std::string> ownNumatuneRecordOf(std::string_view domainXml) {
  VRI_ASSIGN_OR_RETURN(XmlDocument doc, XmlDocument::parse(domainXml, "domain XML"));
  xmlNodePtr record = ownNumatuneRecordIn(doc.root());
  if (record == nullptr) return std::string();
  std::string out = "<own-numatune>";
  if (xmlNodePtr numatune = childElement(record, "numatune")) {
    std::unique_ptr<xmlNode, void (*)(xmlNodePtr)> copy(xmlDocCopyNode(numatune, doc.get(), 1), xmlFreeNode);
    if (!copy) return Error::internal("cannot copy the domain's own <numatune>");
    outOfNamespaces(copy.get());
    VRI_ASSIGN_OR_RETURN(const std::string text, serializeNode(doc.get(), copy.get()));
    out += text;
  }
  return out + "</own-numatune>";
}

}  // namespace vri
