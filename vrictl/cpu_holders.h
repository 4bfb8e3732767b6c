// Who holds each CPU, from GetNode's pools and ListTenants' names: what `map` draws.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "proto/vri.pb.h"

namespace vri::ctl {

struct CpuHolder {
  enum class Kind { kReserved, kShared, kExclusive, kDraining, kIdle };
  Kind kind = Kind::kIdle;  // kIdle: online but in no pool (held for a VM that is starting)
  std::string owner;        // kExclusive and kDraining: the pool's owner ("pod/<uid>/<name>", "vm/<uuid>")
};

// Every online CPU of `node`.
std::map<int, CpuHolder> cpuHolders(const v1::Node& node);

// "pod default/web app", "vm guest1": the owner with its tenant's name when `tenants` knows it.
std::string ownerName(const std::string& owner, const v1::TenantList& tenants);

}  // namespace vri::ctl
