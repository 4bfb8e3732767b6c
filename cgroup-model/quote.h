// Quoting untrusted text inside error messages.
#pragma once

#include <string>
#include <string_view>

namespace vri {

// `"text"`, with control characters escaped and anything past 64 characters
// cut to "...", so hostile or huge input cannot flood a log line.
std::string quoteForMessage(std::string_view text);

}  // namespace vri
