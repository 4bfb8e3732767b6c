#include "accounting/spec_amounts.h"

#include "accounting/numa_memory.h"

#include "base/amount_limits.h"

namespace vri {

namespace {

// The largest hugepage size any architecture has (16 GiB on arm64 and POWER).
constexpr uint64_t kMaxPageSize = uint64_t{16} << 30;

Result<void> checkPageSize(std::string_view field, uint64_t size) {
  if (size == 0) return {};
  if ((size & (size - 1)) != 0 || size > kMaxPageSize)
    return Error::invalidArgument(std::string(field) + ": not a page size: " + std::to_string(size));
  return {};
}

Result<void> checkNode(std::string_view field, int node) {
  if (node < 0 || node >= CpuSet::kMaxCpus)
    return Error::invalidArgument(std::string(field) + ": no NUMA node " + std::to_string(node));
  return {};
}

}  // namespace

Result<void> checkPodAmounts(const PodSpec& pod) {
  VRI_TRY(checkMilliCpu("overhead_cpu_milli", pod.overheadCpuMilli));
  VRI_TRY(checkMemoryBytes("overhead_memory_bytes", pod.overheadMemoryBytes));
  return {};
}

Result<void> checkContainerAmounts(const ContainerSpec& c) {
  VRI_TRY(checkMilliCpu("cpu_request_milli", c.cpuRequestMilli));
  VRI_TRY(checkMilliCpu("cpu_limit_milli", c.cpuLimitMilli));
  if (c.cpuLimitMilli > 0 && c.cpuLimitMilli < c.cpuRequestMilli)
    return Error::invalidArgument("cpu_limit_milli: " + std::to_string(c.cpuLimitMilli) +
                                  " is below cpu_request_milli " + std::to_string(c.cpuRequestMilli));
  VRI_TRY(checkMemoryBytes("memory_limit_bytes", c.memoryLimitBytes.value_or(0)));
  VRI_TRY(checkMemoryBytes("memory_request_bytes", c.memoryRequestBytes.value_or(0)));
  for (const auto& [size, bytes] : c.hugepageLimits) {
    if (size == 0) return Error::invalidArgument("hugepage_limits: a page size of 0");
    VRI_TRY(checkPageSize("hugepage_limits.page_size", size));
    VRI_TRY(checkMemoryBytes("hugepage_limits.limit_bytes", bytes));
    if (bytes % size != 0)
      return Error::invalidArgument("hugepage_limits: " + std::to_string(bytes) + " bytes of " +
                                    memoryResourceName(size) + " are not a whole number of pages");
  }
  return {};
}

Result<void> checkVmAmounts(const VmSpec& vm) {
  if (vm.cpu.vcpus < 1 || vm.cpu.vcpus > kMaxVmVcpus)
    return Error::invalidArgument("vcpus: must be from 1 to " + std::to_string(kMaxVmVcpus) + ", got " +
                                  std::to_string(vm.cpu.vcpus));
  VRI_TRY(checkMemoryBytes("memory_bytes", vm.memoryBytes));
  VRI_TRY(checkPageSize("hugepage_size", vm.hugepageSize));
  for (int node : vm.strictNumaNodes) VRI_TRY(checkNode("strict_numa_nodes", node));
  for (const VmMemoryPart& part : vm.memoryParts) {
    VRI_TRY(checkMemoryBytes("memory_parts.bytes", part.bytes));
    VRI_TRY(checkPageSize("memory_parts.page_size", part.pageSize));
    for (int node : part.hostNodes) VRI_TRY(checkNode("memory_parts.host_nodes", node));
  }
  return {};  // how the parts add up is validateMemoryParts'
}

}  // namespace vri
