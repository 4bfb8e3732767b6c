// The one adapter from hwloc to Topology. Nothing else in VRI includes hwloc.
#pragma once

#include <string>
#include <string_view>

#include "accounting/topology.h"
#include "base/result.h"

namespace vri {

// The machine VRI runs on, including CPUs outside this process's own cpuset
// (a node manager places work on the whole machine).
Result<Topology> loadLiveTopology();

// An hwloc 2 XML export (`lstopo --of xml`), e.g. of a machine in the field.
Result<Topology> loadTopologyFromXmlFile(const std::string& path);
Result<Topology> loadTopologyFromXml(std::string_view xml);

// An hwloc synthetic description such as "pack:2 numa:2 core:8 pu:2" or
// "pack:2 numa:2 l3:2 core:4 pu:2" (see hwloc's documentation for the grammar).
Result<Topology> loadSyntheticTopology(std::string_view description);

// Picks one of the above from a single string: "live", "xml:<path>" or
// "synthetic:<description>"; used by command-line flags.
Result<Topology> loadTopology(std::string_view source);

}  // namespace vri
