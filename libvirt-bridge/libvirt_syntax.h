// Numbers and lists as libvirt's own parsers read them from a domain definition: the readers of
// domain_xml.cc and the writer of cputune_writer.cc share them, so that what one reads the other
// writes back to the same element.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/cpuset.h"
#include "base/quote.h"
#include "base/result.h"

namespace vri {

// A whole number: digits only, all of `text`, within T.
template <typename T>
Result<T> libvirtNumber(std::string_view text, std::string_view what) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Error::invalidArgument(std::string(what) + ": not a number: " + quoteForMessage(text));
  }
  return value;
}

// An unsigned number as libvirt's virXMLPropUInt reads an id attribute (strtoul, then
// virStrToLong_uip's checks): leading blanks and one '+' are taken, any '-' is refused ("-0"
// too), the whole text must be the number, and it fits 32 bits.
Result<uint32_t> parseLibvirtUnsigned(std::string_view text, std::string_view what);

// A CPU or node list as libvirt's virBitmapParse reads it: the kernel's list
// format plus "^N", which clears N from what the items before it set, so
// order matters ("^1,0-3" is 0-3; "0-3,^1" is 0,2-3; "^5,5" is 5). libvirt
// normalises what it prints, but a raw definition may hold any of these.
Result<CpuSet> parseLibvirtBitmap(std::string_view text);

}  // namespace vri
