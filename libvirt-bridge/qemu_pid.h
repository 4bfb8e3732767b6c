// The pid of a running domain's QEMU, from the file libvirt keeps for it.
#pragma once

#include <string>

#include "base/result.h"

namespace vri {

// Reads `<pidDir>/<domainName>.pid` (the name is validated by the domain XML parser).
Result<int> readQemuPid(const std::string& pidDir, const std::string& domainName);

}  // namespace vri
