// XmlDocument: a parsed XML document from an untrusted source (libvirt's hook
// stdin, a migration stream, a saved image's definition).
//
// Refused before libxml2 sees them: more than kMaxXmlBytes, any DOCTYPE (so no
// entity can be declared, let alone expanded) and NUL bytes. libxml2 runs
// without network access and without substituting entities; its own depth
// limit (256) stops deep nesting. Errors name the line libxml2 stopped at.
#pragma once

#include <libxml/tree.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "libvirt-bridge/xml_limits.h"

namespace vri {

class XmlDocument {
 public:
  static Result<XmlDocument> parse(std::string_view text, std::string_view what);

  xmlNodePtr root() const { return xmlDocGetRootElement(doc_.get()); }
  xmlDocPtr get() const { return doc_.get(); }
  // The root element as text, without an XML declaration.
  Result<std::string> serialize() const;

 private:
  struct Free {
    void operator()(xmlDocPtr doc) const { xmlFreeDoc(doc); }
  };
  explicit XmlDocument(xmlDocPtr doc) : doc_(doc) {}
  std::unique_ptr<xmlDoc, Free> doc_;
};

// `node` of `doc` as text, with its descendants.
Result<std::string> serializeNode(xmlDocPtr doc, xmlNodePtr node);

// Small readers over libxml2's tree; names compare without namespace unless given.
std::string_view nodeName(xmlNodePtr node);
bool isElement(xmlNodePtr node, std::string_view name);
// The first child element called `name`, or null.
xmlNodePtr childElement(xmlNodePtr parent, std::string_view name);
// The attribute's value, or nullopt when absent.
std::optional<std::string> attribute(xmlNodePtr node, std::string_view name);
std::string textOf(xmlNodePtr node);

}  // namespace vri
