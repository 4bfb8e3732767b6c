#include "accounting/vm_cpu_placement.h"

#include <algorithm>
#include <map>

#include "accounting/cpu_take.h"

namespace vri {

namespace {

std::string describeRequest(const VmCpuRequest& request, int dedicated, int helpers) {
  std::string text =
      "VM " + request.name + " (" + std::to_string(dedicated) + " dedicated vCPU" + (dedicated == 1 ? "" : "s");
  if (helpers > 0) text += " + " + std::to_string(helpers) + " isolated helper thread" + (helpers == 1 ? "" : "s");
  return text + ")";
}

// The CPUs of `cpus`, one vector per host core, in core order.
std::vector<std::vector<int>> byCore(const Topology& topology, const CpuSet& cpus) {
  std::map<int, std::vector<int>> cores;
  for (int cpu : cpus) cores[topology.cpu(cpu)->core].push_back(cpu);
  std::vector<std::vector<int>> groups;
  for (auto& [core, members] : cores) groups.push_back(std::move(members));
  return groups;
}

// Maps vCPUs onto host CPUs so that guest sibling vCPUs (same id / threads)
// share a host core wherever one has room; returns the host CPUs left over.
std::vector<int> mapVcpus(const std::vector<int>& vcpus, int guestThreads, std::vector<std::vector<int>> hostCores,
                          std::map<int, int>& vcpuCpus) {
  std::vector<std::vector<int>> guestCores;
  for (int vcpu : vcpus) {
    if (!guestCores.empty() && guestCores.back().front() / guestThreads == vcpu / guestThreads) {
      guestCores.back().push_back(vcpu);
    } else {
      guestCores.push_back({vcpu});
    }
  }
  std::stable_sort(guestCores.begin(), guestCores.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
  std::stable_sort(hostCores.begin(), hostCores.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
  for (const auto& guest : guestCores) {
    auto room =
        std::find_if(hostCores.begin(), hostCores.end(), [&](auto& host) { return host.size() >= guest.size(); });
    for (int vcpu : guest) {
      auto& host = room != hostCores.end()
                       ? *room
                       : *std::find_if(hostCores.begin(), hostCores.end(), [](auto& h) { return !h.empty(); });
      vcpuCpus[vcpu] = host.front();
      host.erase(host.begin());
    }
  }
  std::vector<int> left;
  for (const auto& host : hostCores) left.insert(left.end(), host.begin(), host.end());
  std::sort(left.begin(), left.end());
  return left;
}

void collectExclusive(VmCpuPlacement& placement) {
  for (const auto& [vcpu, cpu] : placement.vcpuCpus) {
    if (cpu != VmCpuPlacement::kShared) placement.exclusive.add(cpu);
  }
  placement.exclusive |= placement.emulatorCpus;
  for (const auto& [id, cpu] : placement.iothreadCpus) {
    if (cpu != VmCpuPlacement::kShared) placement.exclusive.add(cpu);
  }
}

// Every online vCPU and iothread, on the shared pool.
VmCpuPlacement allShared(const VmCpuRequest& request) {
  VmCpuPlacement placement;
  for (int vcpu : onlineVcpuIds(request)) placement.vcpuCpus[vcpu] = VmCpuPlacement::kShared;
  for (IothreadId id : iothreadIdsOf(request)) placement.iothreadCpus[id] = VmCpuPlacement::kShared;
  return placement;
}

template <typename Id>
std::string idList(const std::vector<Id>& ids) {
  std::string out;
  for (Id id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// The user's pins: exactly the CPUs named, each free for exclusive use; isolated
// helper threads still get CPUs VRI chooses, beside them. An offline vCPU's pin
// is held for it (libvirt applies it when the vCPU is brought online).
Result<VmCpuPlacement> placePinnedVcpus(const Topology& topology, const CpuSet& free, const VmCpuRequest& request,
                                        int helpers, const CpuTakeOptions& options) {
  VmCpuPlacement placement = allShared(request);
  CpuSet pinned;
  for (size_t vcpu = 0; vcpu < request.pinnedVcpuCpus.size(); ++vcpu) {
    const int cpu = request.pinnedVcpuCpus[vcpu];
    if (cpu == VmCpuPlacement::kShared) continue;
    pinned.add(cpu);
    if (placement.vcpuCpus.count(static_cast<int>(vcpu))) {
      placement.vcpuCpus[static_cast<int>(vcpu)] = cpu;
    } else {
      placement.heldBack.add(cpu);
    }
  }
  if (!pinned.isSubsetOf(topology.onlineCpus())) {
    return Error::invalidArgument("VM " + request.name + ": <vcpupin> names CPUs " +
                                  (pinned - topology.onlineCpus()).format() + ", which are not online");
  }
  if (!pinned.isSubsetOf(free)) {
    return Error::resourceExhausted("VM " + request.name + ": <vcpupin> names CPUs " + (pinned - free).format() +
                                    ", which are reserved or held by another tenant (free for exclusive use: " +
                                    (free.empty() ? std::string("none") : free.format()) + ")");
  }
  if (helpers > 0) {
    std::vector<int> nodes;
    for (int cpu : pinned) {
      const int node = topology.cpu(cpu)->numaNode;
      if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    }
    auto chosen = takeCpus(topology, free - pinned, CpuTakeRequest{helpers, nodes}, options);
    if (!chosen.ok()) return std::move(chosen).context(describeRequest(request, 0, helpers)).error();
    auto next = chosen->begin();
    if (request.emulatorPolicy == HelperThreadPolicy::kIsolate) placement.emulatorCpus.add(*next++);
    if (request.iothreadPolicy == HelperThreadPolicy::kIsolate) {
      for (auto& [id, cpu] : placement.iothreadCpus) cpu = *next++;
    }
  }
  collectExclusive(placement);
  return placement;
}

}  // namespace

std::vector<int> onlineVcpuIds(const VmCpuRequest& request) {
  if (!request.onlineVcpus.empty()) return request.onlineVcpus;
  std::vector<int> ids;
  for (int vcpu = 0; vcpu < request.vcpus; ++vcpu) ids.push_back(vcpu);
  return ids;
}

std::vector<IothreadId> iothreadIdsOf(const VmCpuRequest& request) {
  if (!request.iothreadIds.empty()) return request.iothreadIds;
  std::vector<IothreadId> ids;
  for (int id = 1; id <= request.iothreads; ++id) ids.push_back(static_cast<IothreadId>(id));
  return ids;
}

int vcpuIdCount(const VmCpuRequest& request) {
  const std::vector<int> online = onlineVcpuIds(request);
  const int past_online = online.empty() ? 0 : online.back() + 1;
  return std::max(request.maxVcpus, past_online);
}

std::vector<int> vcpuCpusById(const VmCpuRequest& request, const VmCpuPlacement& placement) {
  std::vector<int> cpus(static_cast<size_t>(std::max(vcpuIdCount(request), 0)), VmCpuPlacement::kShared);
  for (size_t vcpu = 0; vcpu < cpus.size(); ++vcpu) {
    const auto placed = placement.vcpuCpus.find(static_cast<int>(vcpu));
    if (placed != placement.vcpuCpus.end()) {
      cpus[vcpu] = placed->second;
    } else if (vcpu < request.pinnedVcpuCpus.size()) {
      cpus[vcpu] = request.pinnedVcpuCpus[vcpu];
    }
  }
  return cpus;
}

Result<void> validateVcpuIds(const VmCpuRequest& request) {
  const std::string who = "VM " + request.name + ": ";
  if (request.vcpus < 1 || request.vcpus > CpuSet::kMaxCpus) {
    return Error::invalidArgument(who + "vcpus: vCPU count " + std::to_string(request.vcpus) + " is out of range");
  }
  if (request.maxVcpus < 0 || request.maxVcpus > CpuSet::kMaxCpus) {
    return Error::invalidArgument(who + "max_vcpus: vCPU id count " + std::to_string(request.maxVcpus) +
                                  " is out of range");
  }
  if (!request.onlineVcpus.empty()) {
    if (request.onlineVcpus.size() != static_cast<size_t>(request.vcpus)) {
      return Error::invalidArgument(who + "online_vcpus: " + std::to_string(request.onlineVcpus.size()) +
                                    " online vCPU ids (" + idList(request.onlineVcpus) + ") for " +
                                    std::to_string(request.vcpus) + " online vCPUs (vcpus)");
    }
    for (size_t i = 0; i < request.onlineVcpus.size(); ++i) {
      const int id = request.onlineVcpus[i];
      if (id < 0 || id >= CpuSet::kMaxCpus || (i > 0 && id <= request.onlineVcpus[i - 1])) {
        return Error::invalidArgument(
            who + "online_vcpus: online vCPU ids must ascend from 0 without repeats: " + idList(request.onlineVcpus));
      }
    }
  }
  if (request.maxVcpus != 0 && request.maxVcpus < vcpuIdCount(request)) {
    return Error::invalidArgument(who + "max_vcpus: vCPU " + std::to_string(vcpuIdCount(request) - 1) +
                                  " is online, and the VM has " + std::to_string(request.maxVcpus) + " vCPUs");
  }
  if (request.iothreads < 0 || request.iothreads > 1024) {
    return Error::invalidArgument(who + "iothreads: iothread count " + std::to_string(request.iothreads) +
                                  " is out of range");
  }
  if (!request.iothreadIds.empty()) {
    if (request.iothreadIds.size() != static_cast<size_t>(request.iothreads)) {
      return Error::invalidArgument(who + "iothread_ids: " + std::to_string(request.iothreadIds.size()) +
                                    " iothread ids for " + std::to_string(request.iothreads) + " iothreads");
    }
    for (size_t i = 0; i < request.iothreadIds.size(); ++i) {
      const IothreadId id = request.iothreadIds[i];
      if (id < 1 || (i > 0 && id <= request.iothreadIds[i - 1])) {
        return Error::invalidArgument(
            who + "iothread_ids: iothread ids must ascend from 1 without repeats: " + idList(request.iothreadIds));
      }
    }
  }
  if (request.pinnedVcpuCpus.size() > static_cast<size_t>(vcpuIdCount(request))) {
    return Error::invalidArgument(who + "pins for " + std::to_string(request.pinnedVcpuCpus.size()) +
                                  " vCPU ids; the VM has " + std::to_string(vcpuIdCount(request)));
  }
  return {};
}

Result<std::vector<int>> dedicatedVcpus(const VmCpuRequest& request) {
  VRI_TRY(validateVcpuIds(request));
  const std::vector<int> online = onlineVcpuIds(request);
  const auto isOnline = [&](int vcpu) { return std::binary_search(online.begin(), online.end(), vcpu); };
  std::vector<int> ids;
  if (!request.pinnedVcpuCpus.empty()) {
    bool any = false;
    for (size_t i = 0; i < request.pinnedVcpuCpus.size(); ++i) {
      const int vcpu = static_cast<int>(i);
      const int cpu = request.pinnedVcpuCpus[i];
      if (cpu < VmCpuPlacement::kShared || cpu >= CpuSet::kMaxCpus) {
        return Error::invalidArgument("VM " + request.name + ": vCPU " + std::to_string(vcpu) + " is pinned to CPU " +
                                      std::to_string(cpu) + ", which does not exist on this host");
      }
      if (cpu == VmCpuPlacement::kShared) continue;
      any = true;
      if (isOnline(vcpu)) ids.push_back(vcpu);
    }
    if (!any) return Error::invalidArgument("VM " + request.name + ": vCPU pins name no CPU");
    return ids;
  }
  switch (request.cpuPolicy) {
    case VmCpuPolicy::kShared: return ids;
    case VmCpuPolicy::kDedicated: return online;
    case VmCpuPolicy::kMixed:
      ids = request.mixedDedicatedVcpus;
      std::sort(ids.begin(), ids.end());
      if (ids.empty())
        return Error::invalidArgument("VM " + request.name +
                                      ": mixed_dedicated_vcpus: mixed cpu policy lists no dedicated vCPU");
      for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= vcpuIdCount(request)) {
          return Error::invalidArgument("VM " + request.name + ": mixed_dedicated_vcpus: dedicated vCPU " +
                                        std::to_string(ids[i]) + " does not exist (the VM has " +
                                        std::to_string(vcpuIdCount(request)) + ")");
        }
        if (i > 0 && ids[i] == ids[i - 1]) {
          return Error::invalidArgument("VM " + request.name + ": dedicated vCPU " + std::to_string(ids[i]) +
                                        " is listed twice");
        }
      }
      // One offline at start holds no CPU until it is brought online.
      std::erase_if(ids, [&](int vcpu) { return !isOnline(vcpu); });
      return ids;
  }
  return Error::internal("unknown cpu policy");
}

Result<VmCpuPlacement> planVmCpus(const Topology& topology, const CpuSet& available, const VmCpuRequest& request,
                                  const CpuTakeOptions& options) {
  VRI_ASSIGN_OR_RETURN(std::vector<int> vcpus, dedicatedVcpus(request));
  if (request.guestThreadsPerCore < 1) return Error::invalidArgument("VM " + request.name + ": guest threads < 1");
  VmCpuPlacement placement = allShared(request);

  const int dedicated = static_cast<int>(vcpus.size());
  const int helpers = (request.emulatorPolicy == HelperThreadPolicy::kIsolate ? 1 : 0) +
                      (request.iothreadPolicy == HelperThreadPolicy::kIsolate ? request.iothreads : 0);
  const int needed = dedicated + helpers;
  const CpuSet free = available & topology.onlineCpus();
  if (!request.pinnedVcpuCpus.empty()) return placePinnedVcpus(topology, free, request, helpers, options);
  if (needed == 0) return placement;
  const int threads = topology.maxThreadsPerCore();
  CpuTakeOptions take_options = options;
  take_options.fullPcpusOnly = false;  // whole cores are asked for explicitly below
  CpuTakeRequest take{needed, request.preferredNumaNodes};
  CpuSet candidates = free;
  const bool whole_cores = threads > 1 && request.threadPolicy != ThreadPolicy::kPrefer;
  int cores_needed = 0;
  if (whole_cores) {
    // isolate: a core per thread; require: the fewest cores that hold them all.
    cores_needed = request.threadPolicy == ThreadPolicy::kIsolate ? needed : (needed + threads - 1) / threads;
    candidates = wholeFreeCoreCpus(topology, free);
    const int whole_free = static_cast<int>(byCore(topology, candidates).size());
    if (cores_needed > whole_free) {
      return Error::resourceExhausted(describeRequest(request, dedicated, helpers) + " needs " +
                                      std::to_string(cores_needed) + " whole cores (thread policy " +
                                      (request.threadPolicy == ThreadPolicy::kIsolate ? "isolate" : "require") + "); " +
                                      std::to_string(whole_free) + " whole cores are free");
    }
    take.count = cores_needed * threads;
  }
  auto chosen = takeCpus(topology, candidates, take, take_options);
  if (!chosen.ok()) return std::move(chosen).context(describeRequest(request, dedicated, helpers)).error();

  std::vector<std::vector<int>> host_cores = byCore(topology, *chosen);
  if (whole_cores && request.threadPolicy == ThreadPolicy::kIsolate) {
    // One thread of each core is used, its siblings are held back.
    for (auto& core : host_cores) {
      for (size_t i = 1; i < core.size(); ++i) placement.heldBack.add(core[i]);
      core.resize(1);
    }
  }
  std::vector<int> left = mapVcpus(vcpus, request.guestThreadsPerCore, host_cores, placement.vcpuCpus);
  size_t next = 0;
  if (request.emulatorPolicy == HelperThreadPolicy::kIsolate) placement.emulatorCpus.add(left[next++]);
  if (request.iothreadPolicy == HelperThreadPolicy::kIsolate) {
    for (auto& [id, cpu] : placement.iothreadCpus) cpu = left[next++];
  }
  for (; next < left.size(); ++next) placement.heldBack.add(left[next]);  // require: spare threads of its cores
  collectExclusive(placement);
  return placement;
}

bool dedicatesVcpu(const VmCpuRequest& request, int vcpu) {
  if (!request.pinnedVcpuCpus.empty()) {
    return vcpu >= 0 && vcpu < static_cast<int>(request.pinnedVcpuCpus.size()) &&
           request.pinnedVcpuCpus[vcpu] != VmCpuPlacement::kShared;
  }
  if (request.cpuPolicy == VmCpuPolicy::kDedicated) return true;
  const auto& mixed = request.mixedDedicatedVcpus;
  return request.cpuPolicy == VmCpuPolicy::kMixed && std::find(mixed.begin(), mixed.end(), vcpu) != mixed.end();
}

void followPlacement(VmCpuRequest& request, const VmCpuPlacement& placement) {
  request.emulatorPolicy = placement.emulatorCpus.empty() ? HelperThreadPolicy::kShared : HelperThreadPolicy::kIsolate;
  if (!request.pinnedVcpuCpus.empty()) {
    for (const auto& [id, cpu] : placement.vcpuCpus) {
      if (id < static_cast<int>(request.pinnedVcpuCpus.size())) request.pinnedVcpuCpus[id] = cpu;
    }
    return;
  }
  std::vector<int> dedicated;
  const int ids = vcpuIdCount(request);
  for (int id = 0; id < ids; ++id) {
    const auto online = placement.vcpuCpus.find(id);
    const bool own =
        online != placement.vcpuCpus.end() ? online->second != VmCpuPlacement::kShared : dedicatesVcpu(request, id);
    if (own) dedicated.push_back(id);
  }
  request.mixedDedicatedVcpus.clear();
  if (dedicated.empty()) {
    request.cpuPolicy = VmCpuPolicy::kShared;
  } else if (static_cast<int>(dedicated.size()) == ids) {
    request.cpuPolicy = VmCpuPolicy::kDedicated;
  } else {
    request.cpuPolicy = VmCpuPolicy::kMixed;
    request.mixedDedicatedVcpus = std::move(dedicated);
  }
}

int sharedVcpuCount(const VmCpuPlacement& placement) {
  return static_cast<int>(std::count_if(placement.vcpuCpus.begin(), placement.vcpuCpus.end(),
                                        [](const auto& vcpu) { return vcpu.second == VmCpuPlacement::kShared; }));
}

CpuSet cpusInUse(const VmCpuPlacement& placement) {
  CpuSet cpus = placement.emulatorCpus;
  for (const auto& [id, cpu] : placement.vcpuCpus) {
    if (cpu != VmCpuPlacement::kShared) cpus.add(cpu);
  }
  for (const auto& [id, cpu] : placement.iothreadCpus) {
    if (cpu != VmCpuPlacement::kShared) cpus.add(cpu);
  }
  return cpus;
}

}  // namespace vri
