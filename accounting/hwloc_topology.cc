#include "accounting/hwloc_topology.h"

#include <hwloc.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "base/quote.h"

namespace vri {

namespace {

// A larger XML file is not a topology export: refuse it before hwloc parses it.
constexpr std::streamsize kMaxXmlBytes = 64 << 20;

struct TopologyCloser {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using HwlocTopology = std::unique_ptr<hwloc_topology, TopologyCloser>;

Result<HwlocTopology> newHwlocTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return Error::fromErrno(errno, "hwloc_topology_init");
  HwlocTopology topology(raw);
  // The whole machine, not only the CPUs this process may run on.
  if (hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
    return Error::fromErrno(errno, "hwloc_topology_set_flags");
  }
  return topology;
}

Result<CpuSet> toCpuSet(hwloc_const_bitmap_t bitmap, std::string_view what) {
  if (hwloc_bitmap_weight(bitmap) < 0) return Error::invalidArgument(std::string(what) + " is infinite");
  CpuSet set;
  for (int id = hwloc_bitmap_first(bitmap); id >= 0; id = hwloc_bitmap_next(bitmap, id)) {
    if (id >= CpuSet::kMaxCpus) {
      return Error::invalidArgument(std::string(what) + " holds CPU " + std::to_string(id) + ", beyond the " +
                                    std::to_string(CpuSet::kMaxCpus) + " VRI supports");
    }
    set.add(id);
  }
  return set;
}

int objectId(hwloc_obj_t object) {
  return object->os_index == HWLOC_UNKNOWN_INDEX ? static_cast<int>(object->logical_index)
                                                 : static_cast<int>(object->os_index);
}

// hwloc lists the base page first; the larger sizes after it are hugepages.
std::map<uint64_t, uint64_t> hugepagesOf(hwloc_obj_t numa) {
  constexpr uint64_t kLargestBasePage = 64 * 1024;
  std::map<uint64_t, uint64_t> pages;
  const auto& attr = numa->attr->numanode;
  for (unsigned i = 0; i < attr.page_types_len; ++i) {
    const uint64_t size = attr.page_types[i].size;
    if (size == 0 || (i == 0 && size <= kLargestBasePage)) continue;
    pages[size] = attr.page_types[i].count;
  }
  return pages;
}

// The firmware's NUMA latency matrix in the order of `numaNodes`, or empty.
std::vector<std::vector<uint32_t>> distancesOf(hwloc_topology_t topology,
                                               const std::vector<NumaNodeMemory>& numaNodes) {
  unsigned count = 1;
  hwloc_distances_s* matrix = nullptr;
  if (hwloc_distances_get_by_type(topology, HWLOC_OBJ_NUMANODE, &count, &matrix, HWLOC_DISTANCES_KIND_MEANS_LATENCY,
                                  0) != 0 ||
      count == 0 || matrix == nullptr) {
    return {};
  }
  std::vector<int> position_of_object(matrix->nbobjs, -1);
  bool covers_every_node = matrix->nbobjs == numaNodes.size();
  for (unsigned i = 0; i < matrix->nbobjs; ++i) {
    for (size_t n = 0; n < numaNodes.size(); ++n) {
      if (numaNodes[n].node == objectId(matrix->objs[i])) position_of_object[i] = static_cast<int>(n);
    }
    if (position_of_object[i] < 0) covers_every_node = false;
  }
  std::vector<std::vector<uint32_t>> distances;
  if (covers_every_node) {
    distances.assign(numaNodes.size(), std::vector<uint32_t>(numaNodes.size(), 0));
    for (unsigned i = 0; i < matrix->nbobjs; ++i) {
      for (unsigned j = 0; j < matrix->nbobjs; ++j) {
        distances[static_cast<size_t>(position_of_object[i])][static_cast<size_t>(position_of_object[j])] =
            static_cast<uint32_t>(matrix->values[i * matrix->nbobjs + j]);
      }
    }
  }
  hwloc_distances_release(topology, matrix);
  return distances;
}

Result<TopologyDescription> describe(hwloc_topology_t topology, std::string source) {
  TopologyDescription description;
  description.source = std::move(source);

  VRI_ASSIGN_OR_RETURN(CpuSet online, toCpuSet(hwloc_topology_get_topology_cpuset(topology), "online CPU set"));
  VRI_ASSIGN_OR_RETURN(CpuSet complete, toCpuSet(hwloc_topology_get_complete_cpuset(topology), "complete CPU set"));
  description.offlineCpus = complete - online;

  std::vector<hwloc_obj_t> numa_objects;
  const int numa_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < numa_count; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topology, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, numa);
    description.numaNodes.push_back(NumaNodeMemory{objectId(numa), package ? objectId(package) : -1,
                                                   numa->attr->numanode.local_memory, hugepagesOf(numa)});
    numa_objects.push_back(numa);
  }

  const int core_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
  const int pu_count = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
  for (int i = 0; i < pu_count; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topology, HWLOC_OBJ_PU, static_cast<unsigned>(i));
    CpuLocation location;
    location.cpu = static_cast<int>(pu->os_index);
    if (location.cpu >= CpuSet::kMaxCpus) {
      return Error::invalidArgument("CPU " + std::to_string(location.cpu) + " is beyond the " +
                                    std::to_string(CpuSet::kMaxCpus) + " VRI supports");
    }
    // Machines that report no cores get one core per CPU, numbered after any real ones.
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_CORE, pu);
    location.core = core ? static_cast<int>(core->logical_index) : core_count + static_cast<int>(pu->logical_index);
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, pu);
    location.package = package ? objectId(package) : 0;
    hwloc_obj_t l3 = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_L3CACHE, pu);
    location.l3 = l3 ? static_cast<int>(l3->logical_index) : -1;
    location.numaNode = -1;
    for (hwloc_obj_t numa : numa_objects) {
      if (hwloc_bitmap_isset(numa->cpuset, pu->os_index)) {
        location.numaNode = objectId(numa);
        break;
      }
    }
    if (location.numaNode < 0) {
      return Error::invalidArgument("CPU " + std::to_string(location.cpu) + " belongs to no NUMA node");
    }
    description.cpus.push_back(location);
  }
  description.distances = distancesOf(topology, description.numaNodes);
  return description;
}

Result<Topology> load(HwlocTopology topology, std::string source) {
  if (hwloc_topology_load(topology.get()) != 0) {
    return Error::fromErrno(errno, "hwloc could not build the topology");
  }
  VRI_ASSIGN_OR_RETURN(TopologyDescription description, describe(topology.get(), std::move(source)));
  return Topology::create(std::move(description));
}

}  // namespace

Result<Topology> loadLiveTopology() {
  VRI_ASSIGN_OR_RETURN(HwlocTopology topology, newHwlocTopology());
  return load(std::move(topology), "live machine").context("read the live machine's topology");
}

Result<Topology> loadTopologyFromXml(std::string_view xml) {
  if (xml.empty()) return Error::invalidArgument("topology XML is empty");
  if (xml.size() > static_cast<size_t>(kMaxXmlBytes)) return Error::invalidArgument("topology XML is too large");
  VRI_ASSIGN_OR_RETURN(HwlocTopology topology, newHwlocTopology());
  if (hwloc_topology_set_xmlbuffer(topology.get(), xml.data(), static_cast<int>(xml.size())) != 0) {
    return Error::fromErrno(errno, "hwloc refused the topology XML");
  }
  return load(std::move(topology), "xml")
      .context("invalid topology XML (expected an hwloc 2 export from lstopo --of xml)");
}

Result<Topology> loadTopologyFromXmlFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Error::fromErrno(errno, "open topology XML " + quoteForMessage(path));
  std::string xml;
  std::vector<char> chunk(1 << 16);
  while (file.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || file.gcount() > 0) {
    xml.append(chunk.data(), static_cast<size_t>(file.gcount()));
    if (static_cast<std::streamsize>(xml.size()) > kMaxXmlBytes) {
      return Error::invalidArgument("topology XML " + quoteForMessage(path) + " is larger than 64 MiB");
    }
  }
  if (file.bad()) return Error::fromErrno(errno, "read topology XML " + quoteForMessage(path));
  auto topology = loadTopologyFromXml(xml);
  if (!topology.ok()) return std::move(topology).context(quoteForMessage(path));
  return topology;
}

Result<Topology> loadSyntheticTopology(std::string_view description) {
  const std::string text(description);
  VRI_ASSIGN_OR_RETURN(HwlocTopology topology, newHwlocTopology());
  if (hwloc_topology_set_synthetic(topology.get(), text.c_str()) != 0) {
    return Error::invalidArgument("invalid synthetic topology " + quoteForMessage(text) +
                                  " (expected hwloc's synthetic syntax, e.g. \"pack:2 numa:2 core:8 pu:2\")");
  }
  return load(std::move(topology), "synthetic " + text).context("synthetic topology " + quoteForMessage(text));
}

Result<Topology> loadTopology(std::string_view source) {
  if (source == "live") return loadLiveTopology();
  if (source.starts_with("xml:")) return loadTopologyFromXmlFile(std::string(source.substr(4)));
  if (source.starts_with("synthetic:")) return loadSyntheticTopology(source.substr(10));
  return Error::invalidArgument("unknown topology source " + quoteForMessage(source) +
                                " (use live, xml:<path> or synthetic:<description>)");
}

}  // namespace vri
