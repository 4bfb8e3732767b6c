#include "libvirt-bridge/libvirt_syntax.h"

#include <algorithm>
#include <cctype>

namespace vri {

Result<uint32_t> parseLibvirtUnsigned(std::string_view text, std::string_view what) {
  std::string_view digits = text;
  while (!digits.empty() && std::isspace(static_cast<unsigned char>(digits.front()))) digits.remove_prefix(1);
  if (digits.starts_with("-"))
    return Error::invalidArgument(std::string(what) + ": negative: " + quoteForMessage(text));
  if (digits.starts_with("+")) digits.remove_prefix(1);
  if (digits.empty() || !std::isdigit(static_cast<unsigned char>(digits.front()))) {
    return Error::invalidArgument(std::string(what) + ": not a number: " + quoteForMessage(text));
  }
  return libvirtNumber<uint32_t>(digits, what);
}

Result<CpuSet> parseLibvirtBitmap(std::string_view text) {
  CpuSet result;
  bool any_exclusion = false;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    if (item.starts_with("^")) {
      VRI_ASSIGN_OR_RETURN(CpuSet one, CpuSet::parse(item.substr(1)));
      if (one.count() != 1) return Error::invalidArgument("\"^\" excludes one number, not " + quoteForMessage(item));
      result = result - one;
      any_exclusion = true;
    } else {
      VRI_ASSIGN_OR_RETURN(CpuSet part, CpuSet::parse(item));
      if (part.empty() && !text.empty()) return Error::invalidArgument("empty item in " + quoteForMessage(text));
      result |= part;
    }
    start = comma + 1;
  }
  if (any_exclusion && result.empty())
    return Error::invalidArgument(quoteForMessage(text) + " leaves nothing after its exclusions");
  return result;
}

}  // namespace vri
