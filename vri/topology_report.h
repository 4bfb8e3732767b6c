// Human-readable reports of the topology and the CPU pools, laid out the way
// lscpu and lstopo users read them.
#pragma once

#include <cstdint>
#include <string>

#include "accounting/cpu_pools.h"
#include "accounting/topology.h"

namespace vri {

// "16.0 GiB", "512 MiB", "2 MiB"...
std::string formatBytes(uint64_t bytes);

// A summary line, then packages with their L3 groups and NUMA nodes, each
// NUMA node with its memory, hugepages and cores with their threads, then
// CPU-less NUMA nodes, offline CPUs and the NUMA distance matrix.
std::string formatTopology(const Topology& topology);

std::string formatCpuPools(const CpuPools& pools, bool strict);

}  // namespace vri
