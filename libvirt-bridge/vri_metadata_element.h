// Finding VRI's own element, <metadata><vri:domain>, in a domain document: the
// parser reads it and the writer rewrites it, and both must find the same one
// (by namespace, whatever prefix the document gives it).
#pragma once

#include "libvirt-bridge/domain_xml.h"
#include "libvirt-bridge/xml_document.h"

namespace vri {

// The <domain> root's <metadata> child of VRI's namespace, or null.
inline xmlNodePtr vriMetadataElementOf(xmlNodePtr domain) {
  xmlNodePtr metadata = childElement(domain, "metadata");
  if (metadata == nullptr) return nullptr;
  for (xmlNodePtr n = metadata->children; n != nullptr; n = n->next) {
    if (isElement(n, "domain") && n->ns != nullptr && n->ns->href != nullptr &&
        reinterpret_cast<const char*>(n->ns->href) == kVriXmlNamespace) {
      return n;
    }
  }
  return nullptr;
}

}  // namespace vri
