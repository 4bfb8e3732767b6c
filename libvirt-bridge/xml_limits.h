// How much domain XML VRI reads from an untrusted source, in one place for the
// hook's front (which links no XML parser) and XmlDocument (which refuses more).
#pragma once

#include <cstddef>

namespace vri {

inline constexpr size_t kMaxXmlBytes = 1 << 20;  // libvirt's own domain XML limit is 10 MB; a real one is < 64 KB

}  // namespace vri
