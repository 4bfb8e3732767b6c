// How both hook programs meet libvirt: the domain XML from stdin, the answer
// on stdout and stderr.
#pragma once

#include <string>
#include <string_view>

namespace vri {

// Everything on stdin, keeping at most `limit` + 1 bytes so that an oversized document is seen as
// such. Always read to the end: libvirt writes the whole document whatever the operation.
std::string readHookStdin(size_t limit);

// `out` on stdout and `err` on stderr, each written whole.
void writeHookOutput(std::string_view out, std::string_view err);

}  // namespace vri
