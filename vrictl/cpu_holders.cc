#include "vrictl/cpu_holders.h"

#include "base/cpuset.h"

namespace vri::ctl {

namespace {

void mark(std::map<int, CpuHolder>& holders, const std::string& cpus, CpuHolder holder) {
  const auto set = CpuSet::parse(cpus);
  if (!set.ok()) return;
  for (int cpu : set->toVector()) {
    if (holders.count(cpu)) holders[cpu] = holder;
  }
}

}  // namespace

std::map<int, CpuHolder> cpuHolders(const v1::Node& node) {
  std::map<int, CpuHolder> holders;
  for (const v1::CpuInfo& cpu : node.cpus()) holders[cpu.id()] = {};
  // Reserved CPUs are in the shared pool too unless the reservation is strict: the mark says reserved.
  mark(holders, node.shared_cpus(), {CpuHolder::Kind::kShared, ""});
  mark(holders, node.reserved_cpus(), {CpuHolder::Kind::kReserved, ""});
  for (const auto& [owner, cpus] : node.exclusive_cpus()) {
    const bool draining = owner.rfind("draining/", 0) == 0;
    mark(holders, cpus,
         {draining ? CpuHolder::Kind::kDraining : CpuHolder::Kind::kExclusive, draining ? owner.substr(9) : owner});
  }
  return holders;
}

std::string ownerName(const std::string& owner, const v1::TenantList& tenants) {
  // "pod/<uid>/<container>", "pod/<uid>", "vm/<uuid>"
  const size_t first = owner.find('/');
  if (first == std::string::npos) return owner;
  const std::string kind = owner.substr(0, first);
  const size_t second = owner.find('/', first + 1);
  const std::string id = owner.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  const std::string rest = second == std::string::npos ? "" : " " + owner.substr(second + 1);
  for (const v1::Tenant& t : tenants.tenants()) {
    if (kind == "pod" && t.has_pod() && t.pod().uid() == id) return "pod " + t.pod().name() + rest;
    if (kind == "vm" && t.has_vm() && t.vm().uuid() == id) return "vm " + t.vm().name() + rest;
  }
  return owner;
}

}  // namespace vri::ctl
