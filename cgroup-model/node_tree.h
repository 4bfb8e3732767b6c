// The node's whole cgroup tree as VRI wants it: the kubelet side (kubepods ->
// QoS -> pod -> container) beside the libvirt side (machine partition -> VM
// scope -> vcpuN, emulator, iothreadN), with every value computed the way
// kubelet computes it.
//
//   <kubelet parent>/kubepods                     cpus: shared + pods' exclusive
//                                                  (partitions: exclusive: pods' exclusive)
//     pod<uid>/<ctr>       (Guaranteed)            shares: allocatable CPU
//     burstable/pod<uid>/<ctr>                     shares: sum of Burstable requests
//     besteffort/pod<uid>/<ctr>                    shares: 2
//   <machine partition>                            cpus: shared + VMs' exclusive
//     <VM scope>[/libvirt]/{vcpuN,emulator,iothreadN}
//                                                  shares: kubepods' x VM requests / pod requests
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cgroup-model/cgroup_applier.h"
#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/libvirt_namer.h"

namespace vri {

// Who writes which file (docs/architecture.md): by default kubelet and the runtime
// keep writing the kubelet side's cpu and memory values and VRI only its
// cpusets; kEverything makes VRI write them too (hosts without kubelet, tests).
enum class Ownership { kCpusetsAndMachine, kEverything };
Result<Ownership> parseOwnership(std::string_view text);  // "cpusets" | "everything"
std::string_view ownershipName(Ownership ownership);

struct ContainerCgroup {
  std::string id;
  int64_t cpuRequestMilli = 0;
  int64_t cpuLimitMilli = 0;  // 0: no limit
  std::optional<uint64_t> memoryLimitBytes;
  std::optional<CpuSet> exclusiveCpus;  // nullopt: the shared pool
  std::optional<CpuSet> mems;           // NUMA-pinned memory; nullopt: every node
  // Page size -> hugetlb limit in bytes (0: no pages), one entry per size the node has, as the
  // runtime writes them from CRI's hugepage_limits; empty: not known (nothing is verified).
  std::map<uint64_t, uint64_t> hugepageLimits = {};
};

struct PodCgroup {
  std::string uid;
  QosClass qos = QosClass::kBestEffort;
  std::vector<ContainerCgroup> containers;
  int64_t overheadCpuMilli = 0;
  uint64_t overheadMemoryBytes = 0;
  // The runtime's sandbox (pause) container: its cgroup is kept on the shared
  // pool, with BestEffort's shares when VRI writes everything; empty: none known.
  std::string sandboxId;
  // kubelet's pod-level hugetlb limits (page size -> bytes, 0 for the sizes not requested): the
  // larger of the app containers' sum and the largest init container's, as kubelet's PodRequests.
  std::map<uint64_t, uint64_t> hugepageLimits = {};
};

struct VmCgroup {
  CgroupPath scope;                                       // found through the QEMU pid, never rebuilt from the name
  int64_t cpuRequestMilli = 0;                            // what the VM asks of the shared pool and its exclusive CPUs
  std::optional<CpuShares> shares;                        // the domain's <cputune><shares>, if set
  std::map<int, std::optional<int>> vcpuCpus;             // online vCPU id -> its exclusive CPU, or the shared pool
  CpuSet emulatorCpus;                                    // empty: the shared pool
  std::map<IothreadId, std::optional<int>> iothreadCpus;  // iothread id -> exclusive CPU or the shared pool
  std::optional<CpuMax> vcpuMax;                          // <cputune> period/quota per vCPU
  std::optional<CpuSet> mems;                             // NUMA-bound memory; nullopt: every node
  std::map<uint64_t, uint64_t>
      hugepageBytes;  // page size -> bytes of guest memory at that size: the scope's hugetlb limits
};

// Sums over every pod and VM that the node-level cgroups' values come from.
struct TreeTotals {
  CpuSet podExclusive;                      // every pod's exclusive CPUs (kubepods)
  std::map<QosClass, CpuSet> qosExclusive;  // the same per QoS class (its QoS cgroup)
  CpuSet vmExclusive;                       // started VMs' exclusive CPUs (the machine partition)
  int64_t podRequestMilli = 0;              // every pod's requests and overhead
  int64_t burstableRequestMilli = 0;        // Burstable pods' (their QoS cgroup's shares)
  int64_t vmRequestMilli = 0;               // started VMs' (the machine partition's shares)
};

struct NodeResources {
  CpuSet sharedCpus;
  CpuSet memoryNodes;                   // cpuset.mems everywhere
  int64_t allocatableCpuMilli = 0;      // capacity - system-reserved - kube-reserved
  uint64_t allocatableMemoryBytes = 0;  // capacity - reserved - eviction-hard
  // Exclusive CPUs of VMs that are admitted or reserved but have no cgroups yet: the
  // machine partition holds them, so that libvirt can pin a starting VM's vCPUs there.
  CpuSet startingVmCpus;
  // CPUs freed by a decision whose writes have not landed: in every parent, in no tenant.
  CpuSet drainingCpus;
  // buildDesiredTree computes these from its pods and VMs; callers that build
  // part of the tree fill them from their books.
  TreeTotals totals;
};

struct TreeLayout {
  KubeletDriver driver = KubeletDriver::kCgroupfs;
  CgroupPath kubeletParent;  // where kubepods sits (kubelet's --cgroup-root)
  LibvirtLayout libvirt = LibvirtLayout::kNoSystemd;
  CgroupPath machinePartition = std::move(CgroupPath::parse("machine")).value();
  Ownership ownership = Ownership::kCpusetsAndMachine;
  // systemd owns kubelet's and machined's units and keeps their values (vrid sets them through
  // SystemdCgroupFs): Burstable and BestEffort pod slices and VM scopes then get no cpuset of
  // their own, and use their QoS slice's or machine.slice's (unit_ownership.h).
  bool systemdUnits = false;
  // v2 on Linux 6.7+ (vri/partition_probe.h): each exclusive pod container's cgroup is a `root`
  // cpuset partition holding its CPUs, and every shared cgroup (pods' and VMs') keeps a wide cpuset
  // (wideSharedCpus) whose effective set the kernel narrows: a pod's exclusive grant writes the
  // same few files however many tenants share the pool. VMs' own exclusive CPUs stay on the
  // rewrite path (a threaded vCPU group cannot be a partition).
  bool cpusetPartitions = false;
};

// The cpuset of the cgroups that run on the shared pool, pods' and VMs': the pool itself, or with
// cpuset partitions the pool and every pod partition's CPUs (the kernel leaves those out of the
// effective set), a value that no pod's exclusive grant or release changes.
CpuSet wideSharedCpus(const TreeLayout& layout, const NodeResources& node);

// kubelet's values.
// A container's cpu and memory values (shares, quota with the default period, memory limit), as runc writes them.
CgroupSettings containerValues(const ContainerCgroup& container);
CpuShares burstableQosShares(const std::vector<PodCgroup>& pods);
int64_t podCpuRequestMilli(const PodCgroup& pod);  // containers plus overhead
// The machine partition's shares: kubepods' shares scaled by VM requests over pod requests.
CpuShares machinePartitionShares(const NodeResources& node, const std::vector<PodCgroup>& pods,
                                 const std::vector<VmCgroup>& vms);
CpuShares machinePartitionShares(int64_t allocatableCpuMilli, int64_t podRequestMilli, int64_t vmRequestMilli);
TreeTotals treeTotals(const std::vector<PodCgroup>& pods, const std::vector<VmCgroup>& vms);
CpuSet podExclusiveCpus(const PodCgroup& pod);
CpuSet vmExclusiveCpus(const VmCgroup& vm);

// The parts of the tree, for callers that write only what a change touched.
// Node level: kubepods, its QoS cgroups and the machine partition, from node.totals.
void addNodeCgroups(const TreeLayout& layout, const KubeletNamer& namer, const NodeResources& node, DesiredTree& tree);
// A pod and its containers that have a runtime id (the others have no cgroup yet).
Result<void> addPodCgroups(const TreeLayout& layout, const KubeletNamer& namer, const NodeResources& node,
                           const PodCgroup& pod, DesiredTree& tree);
// A VM's scope and thread groups.
Result<void> addVmCgroups(const TreeLayout& layout, const LibvirtNamer& namer, const NodeResources& node,
                          const VmCgroup& vm, DesiredTree& tree);

// Refuses invalid identities (pod UIDs, container ids), VM scopes outside the
// machine partition, and exclusive CPUs outside the node.
Result<DesiredTree> buildDesiredTree(const TreeLayout& layout, const NodeResources& node,
                                     const std::vector<PodCgroup>& pods, const std::vector<VmCgroup>& vms);

}  // namespace vri
