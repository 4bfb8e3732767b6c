#include "accounting/tenant_id.h"

namespace vri {

namespace {
constexpr std::string_view kPod = "pod/", kVm = "vm/", kDraining = "draining/";
}

std::string podTenant(const std::string& uid) { return std::string(kPod) + uid; }
std::string containerTenant(const std::string& podUid, const std::string& name) {
  return std::string(kPod) + podUid + "/" + name;
}
std::string vmTenant(const std::string& uuid) { return std::string(kVm) + uuid; }
std::string drainingTenant(const std::string& tenant) { return std::string(kDraining) + tenant; }

TenantName parseTenant(std::string_view owner) {
  TenantName out;
  if (owner.starts_with(kDraining)) {
    out.kind = TenantName::Kind::kDraining;
  } else if (owner.starts_with(kVm)) {
    out.kind = TenantName::Kind::kVm;
    out.uuid = owner.substr(kVm.size());
  } else if (owner.starts_with(kPod)) {
    const std::string_view rest = owner.substr(kPod.size());
    const size_t slash = rest.find('/');
    out.kind = slash == std::string_view::npos ? TenantName::Kind::kPod : TenantName::Kind::kContainer;
    out.podUid = rest.substr(0, slash);
    if (slash != std::string_view::npos) out.name = rest.substr(slash + 1);
  }
  return out;
}

}  // namespace vri
