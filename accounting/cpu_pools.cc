#include "accounting/cpu_pools.h"

#include <string>

#include "accounting/kubelet_cpu_take.h"

namespace vri {

Result<CpuSet> chooseReservedCpus(const Topology& topology, int count) {
  const int online = topology.onlineCpus().count();
  if (count < 0) return Error::invalidArgument("reserved CPU count " + std::to_string(count) + " is negative");
  if (count > online) {
    return Error::invalidArgument("cannot reserve " + std::to_string(count) + " CPUs: the machine has " +
                                  std::to_string(online) + " online");
  }
  // kubelet reserves with the same packed choice it uses for containers.
  return takePacked(topology, topology.onlineCpus(), count, false);
}

Result<CpuPools> computeCpuPools(const Topology& topology, const ReservedCpusConfig& config) {
  const CpuSet& online = topology.onlineCpus();
  CpuPools pools;
  if (config.cpus.has_value()) {
    if (config.count != 0) {
      return Error::invalidArgument("set either reserved-cpus or a reserved CPU count, not both");
    }
    const CpuSet unknown = *config.cpus - online;
    if (!unknown.empty()) {
      return Error::invalidArgument("reserved-cpus " + config.cpus->format() + " names CPUs that are not online: " +
                                    unknown.format() + " (online: " + online.format() + ")");
    }
    pools.reserved = *config.cpus;
  } else {
    VRI_ASSIGN_OR_RETURN(pools.reserved, chooseReservedCpus(topology, config.count));
  }
  pools.assignable = online - pools.reserved;
  pools.shared = config.strict ? pools.assignable : online;
  if (pools.shared.empty()) {
    return Error::invalidArgument("strict-cpu-reservation with reserved CPUs " + pools.reserved.format() +
                                  " leaves no CPU for the shared pool");
  }
  return pools;
}

}  // namespace vri
