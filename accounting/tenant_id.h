// The one way a tenant is named: as an owner in the CPU pool and the NUMA
// books, in events and in log lines.
#pragma once

#include <string>
#include <string_view>

namespace vri {

std::string podTenant(const std::string& uid);                                    // "pod/<uid>"
std::string containerTenant(const std::string& podUid, const std::string& name);  // "pod/<uid>/<name>"
std::string vmTenant(const std::string& uuid);                                    // "vm/<uuid>"
// CPUs held back while the write that frees them is pending: "draining/<tenant>".
std::string drainingTenant(const std::string& tenant);

// What an owner name names.
struct TenantName {
  enum class Kind { kPod, kContainer, kVm, kDraining, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string podUid;  // pods and containers
  std::string name;    // a container's name
  std::string uuid;    // VMs
};
TenantName parseTenant(std::string_view owner);

}  // namespace vri
