#include "libvirt-bridge/xml_document.h"

#include <libxml/parser.h>
#include <libxml/xmlsave.h>

#include <mutex>

#include "base/quote.h"

namespace vri {

namespace {

// libxml2 must be initialised once before threads use it.
void initLibxmlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
}

bool containsCaseInsensitive(std::string_view text, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= text.size(); ++i) {
    bool match = true;
    for (size_t j = 0; j < needle.size() && match; ++j) {
      match = std::toupper(static_cast<unsigned char>(text[i + j])) == needle[j];
    }
    if (match) return true;
  }
  return false;
}

}  // namespace

Result<XmlDocument> XmlDocument::parse(std::string_view text, std::string_view what) {
  const std::string prefix = std::string(what) + ": ";
  if (text.size() > kMaxXmlBytes) {
    return Error::invalidArgument(prefix + "XML of " + std::to_string(text.size()) + " bytes is larger than the " +
                                  std::to_string(kMaxXmlBytes) + " bytes accepted");
  }
  if (text.find('\0') != std::string_view::npos) return Error::invalidArgument(prefix + "XML contains a NUL byte");
  // A fast refusal before parsing; the check after decoding below is the one that holds.
  if (containsCaseInsensitive(text, "<!DOCTYPE") || containsCaseInsensitive(text, "<!ENTITY")) {
    return Error::invalidArgument(prefix + "XML with a DOCTYPE or entity declaration is refused");
  }
  initLibxmlOnce();
  std::unique_ptr<xmlParserCtxt, void (*)(xmlParserCtxtPtr)> ctxt(xmlNewParserCtxt(), xmlFreeParserCtxt);
  if (!ctxt) return Error::internal(prefix + "cannot allocate an XML parser");
  const int options = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA;
  xmlDocPtr doc =
      xmlCtxtReadMemory(ctxt.get(), text.data(), static_cast<int>(text.size()), "domain.xml", nullptr, options);
  if (doc == nullptr || !ctxt->wellFormed) {
    if (doc != nullptr) xmlFreeDoc(doc);
    const xmlError* error = xmlCtxtGetLastError(ctxt.get());
    // libxml2's messages may span lines ("... indicate encoding !\nBytes: 0x99 ..."): one line here.
    const std::string message =
        error != nullptr && error->message != nullptr ? asOneLine(error->message) : "not well-formed";
    const int line = error != nullptr ? error->line : 0;
    return Error::invalidArgument(prefix + "malformed XML" + (line > 0 ? " at line " + std::to_string(line) : "") +
                                  ": " + message);
  }
  XmlDocument parsed(doc);
  // The byte search above only sees a DOCTYPE spelled in ASCII; a document in UTF-16, UTF-7 or
  // EBCDIC spells it otherwise. What libxml2 decoded is the answer: any DTD at all is refused, so
  // no entity it declares is ever expanded into a name or a value.
  if (doc->intSubset != nullptr || doc->extSubset != nullptr)
    return Error::invalidArgument(prefix + "XML with a DOCTYPE or entity declaration is refused");
  if (parsed.root() == nullptr) return Error::invalidArgument(prefix + "XML has no root element");
  return parsed;
}

Result<std::string> XmlDocument::serialize() const { return serializeNode(doc_.get(), root()); }

Result<std::string> serializeNode(xmlDocPtr doc, xmlNodePtr node) {
  std::unique_ptr<xmlBuffer, void (*)(xmlBufferPtr)> buffer(xmlBufferCreate(), xmlBufferFree);
  if (!buffer || xmlNodeDump(buffer.get(), doc, node, 0, 0) < 0) {
    return Error::internal("cannot serialise the domain XML");
  }
  return std::string(reinterpret_cast<const char*>(xmlBufferContent(buffer.get())),
                     static_cast<size_t>(xmlBufferLength(buffer.get())));
}

std::string_view nodeName(xmlNodePtr node) {
  return node != nullptr && node->name != nullptr ? reinterpret_cast<const char*>(node->name) : "";
}

bool isElement(xmlNodePtr node, std::string_view name) {
  return node != nullptr && node->type == XML_ELEMENT_NODE && nodeName(node) == name;
}

xmlNodePtr childElement(xmlNodePtr parent, std::string_view name) {
  for (xmlNodePtr child = parent != nullptr ? parent->children : nullptr; child != nullptr; child = child->next) {
    if (isElement(child, name)) return child;
  }
  return nullptr;
}

std::optional<std::string> attribute(xmlNodePtr node, std::string_view name) {
  const std::string key(name);
  xmlChar* value = xmlGetNoNsProp(node, reinterpret_cast<const xmlChar*>(key.c_str()));
  if (value == nullptr) return std::nullopt;
  std::string out(reinterpret_cast<const char*>(value));
  xmlFree(value);
  return out;
}

std::string textOf(xmlNodePtr node) {
  xmlChar* content = xmlNodeGetContent(node);
  if (content == nullptr) return "";
  std::string out(reinterpret_cast<const char*>(content));
  xmlFree(content);
  const size_t first = out.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace vri
