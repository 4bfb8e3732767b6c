// Quoting untrusted text inside error messages.
#pragma once

#include <string>
#include <string_view>

namespace vri {

// `"text"`, with control characters escaped and anything past 64 characters
// cut to "...", so hostile or huge input cannot flood a log line.
std::string quoteForMessage(std::string_view text);

// `text` on one line: each run of line breaks, tabs and other control characters becomes one
// space, and the ends are trimmed. For messages from libraries (libxml2's span lines) that end up
// where one line is expected: a log line, the line virsh shows from a hook.
std::string asOneLine(std::string_view text);

}  // namespace vri
