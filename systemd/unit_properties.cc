#include "systemd/unit_properties.h"

#include "base/quote.h"
#include "cgroup-model/cgroup_values.h"

namespace vri {

namespace {

// A "t" property from a v2 number-or-"max" file.
Result<UnitProperty> count(std::string name, std::string_view value) {
  VRI_ASSIGN_OR_RETURN(Limit limit, Limit::parseV2(value));
  return UnitProperty{std::move(name), limit.value.value_or(kUnitInfinity)};
}

}  // namespace

std::string UnitProperty::describe() const {
  if (const auto* mask = std::get_if<std::vector<uint8_t>>(&value)) return name + "=" + cpusOfUnitMask(*mask).format();
  const uint64_t number = std::get<uint64_t>(value);
  return name + "=" + (number == kUnitInfinity ? std::string("infinity") : std::to_string(number));
}

std::vector<uint8_t> unitCpuMask(const CpuSet& cpus) {
  if (cpus.empty()) return {};
  std::vector<uint8_t> mask(static_cast<size_t>(cpus.last() / 8 + 1), 0);
  for (int cpu : cpus) mask[static_cast<size_t>(cpu / 8)] |= static_cast<uint8_t>(1u << (cpu % 8));
  return mask;
}

CpuSet cpusOfUnitMask(const std::vector<uint8_t>& mask) {
  CpuSet cpus;
  for (size_t byte = 0; byte < mask.size() && byte * 8 < CpuSet::kMaxCpus; ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      if (mask[byte] & (1u << bit)) cpus.add(static_cast<int>(byte) * 8 + bit);
    }
  }
  return cpus;
}

Result<std::vector<UnitProperty>> unitPropertiesFor(std::string_view file, std::string_view value) {
  if (file == "cpuset.cpus" || file == "cpuset.mems") {
    VRI_ASSIGN_OR_RETURN(CpuSet set, CpuSet::parse(value));
    return std::vector<UnitProperty>{{file == "cpuset.cpus" ? "AllowedCPUs" : "AllowedMemoryNodes", unitCpuMask(set)}};
  }
  if (file == "cpu.weight") {
    VRI_ASSIGN_OR_RETURN(CpuWeight weight, CpuWeight::parse(value));
    return std::vector<UnitProperty>{{"CPUWeight", weight.value}};
  }
  if (file == "cpu.max") {
    VRI_ASSIGN_OR_RETURN(CpuMax max, CpuMax::parseV2(value));
    // systemd keeps the quota per second of wall time, and the period beside it.
    const uint64_t per_second =
        max.quotaUs ? static_cast<uint64_t>(*max.quotaUs) * 1000000 / max.periodUs : kUnitInfinity;
    return std::vector<UnitProperty>{{"CPUQuotaPerSecUSec", per_second}, {"CPUQuotaPeriodUSec", max.periodUs}};
  }
  if (file == "memory.max") {
    VRI_ASSIGN_OR_RETURN(UnitProperty p, count("MemoryMax", value));
    return std::vector<UnitProperty>{p};
  }
  if (file == "memory.min" || file == "memory.low") {
    VRI_ASSIGN_OR_RETURN(UnitProperty p, count(file == "memory.min" ? "MemoryMin" : "MemoryLow", value));
    return std::vector<UnitProperty>{p};
  }
  if (file == "pids.max") {
    VRI_ASSIGN_OR_RETURN(UnitProperty p, count("TasksMax", value));
    return std::vector<UnitProperty>{p};
  }
  if (file.starts_with("hugetlb.")) return std::vector<UnitProperty>{};  // systemd never writes these
  // Nor these (systemd 252 has no property for them): a daemon-reload leaves a partition alone.
  if (file == "cpuset.cpus.exclusive" || file == "cpuset.cpus.partition") return std::vector<UnitProperty>{};
  return Error::invalidArgument("no systemd property expresses " + quoteForMessage(file));
}

}  // namespace vri
