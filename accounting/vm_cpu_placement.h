// Placing a VM's vCPUs, emulator and iothreads on host CPUs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "accounting/cpu_take_options.h"
#include "accounting/topology.h"
#include "base/cpuset.h"
#include "base/result.h"
#include "cgroup-model/iothread_id.h"

namespace vri {

// cpu policy: shared (every vCPU in the shared pool), dedicated (every vCPU
// on its own exclusive CPU), mixed (the listed vCPUs dedicated, the rest shared).
enum class VmCpuPolicy { kShared, kDedicated, kMixed };
// prefer: SMT siblings when possible; isolate: one whole core per dedicated
// vCPU, the unused siblings held back; require: whole cores, refused when too
// few are free.
enum class ThreadPolicy { kPrefer, kIsolate, kRequire };
// shared: in the shared pool; isolate: exclusive CPUs of their own.
enum class HelperThreadPolicy { kShared, kIsolate };

struct VmCpuRequest {
  std::string name;  // for messages
  int vcpus = 1;     // how many vCPUs run (are online)
  // Their ids, ascending; empty: 0 .. vcpus-1. libvirt may start any subset of
  // the vCPUs it knows (<vcpus><vcpu id enabled='yes'>).
  std::vector<int> onlineVcpus;
  // How many vCPU ids the domain has (<vcpu>), online or not; 0: one past the
  // highest online id. Offline vCPUs are pinned to the shared pool, so a
  // hot-plugged vCPU never runs on another tenant's exclusive CPU.
  int maxVcpus = 0;
  VmCpuPolicy cpuPolicy = VmCpuPolicy::kShared;
  std::vector<int> mixedDedicatedVcpus;  // with kMixed: the vCPU ids that are dedicated
  int guestThreadsPerCore = 1;           // the guest CPU topology's threads
  ThreadPolicy threadPolicy = ThreadPolicy::kPrefer;
  HelperThreadPolicy emulatorPolicy = HelperThreadPolicy::kShared;  // isolate: one extra CPU
  int iothreads = 0;
  std::vector<IothreadId> iothreadIds;  // ascending, positive; empty: 1 .. iothreads (<iothreadids>)
  HelperThreadPolicy iothreadPolicy = HelperThreadPolicy::kShared;  // isolate: one extra CPU per iothread
  std::vector<int> preferredNumaNodes;                              // e.g. from <numatune>; empty: VRI chooses
  // Pins the user wrote (<vcpupin>): index = vCPU id, its host CPU or kShared
  // for an unpinned vCPU; only online vCPUs count. Non-empty: exactly these
  // CPUs, exclusively, or a refusal.
  std::vector<int> pinnedVcpuCpus;
};

// The ids of the request's online vCPUs, and of its iothreads.
std::vector<int> onlineVcpuIds(const VmCpuRequest& request);
std::vector<IothreadId> iothreadIdsOf(const VmCpuRequest& request);
// How many vCPU ids exist (online and offline).
int vcpuIdCount(const VmCpuRequest& request);
// Refuses ids out of range, repeated or out of order, and counts that disagree with them.
Result<void> validateVcpuIds(const VmCpuRequest& request);

struct VmCpuPlacement {
  static constexpr int kShared = -1;
  std::map<int, int> vcpuCpus;             // online vCPU id -> its host CPU, or kShared
  CpuSet emulatorCpus;                     // empty: the shared pool
  std::map<IothreadId, int> iothreadCpus;  // iothread id -> its host CPU, or kShared
  CpuSet exclusive;                        // every CPU used above
  CpuSet heldBack;                         // siblings owned by the VM and used by nobody (thread policy isolate)
  CpuSet mems;                             // cpuset.mems for a NUMA-bound VM (set by the ledger); empty: all nodes
  // Guest cell -> the host NUMA nodes its memory is on, where VRI placed cells
  // one by one or the domain bound them (set by the ledger; written back as <memnode>s).
  std::map<int, CpuSet> cellNodes;
};

// Every vCPU id's CPU (index = id, offline vCPUs included): the placement's
// for an online vCPU, the user's pin or kShared for an offline one.
std::vector<int> vcpuCpusById(const VmCpuRequest& request, const VmCpuPlacement& placement);

// The vCPU ids that get exclusive CPUs under the request's policy (or the
// user's pins), ascending; refuses ids out of range or repeated.
Result<std::vector<int>> dedicatedVcpus(const VmCpuRequest& request);

// How many of the placement's online vCPUs run on the shared pool.
int sharedVcpuCount(const VmCpuPlacement& placement);
// The CPUs the placement's vCPUs, emulator and iothreads hold as their own.
CpuSet cpusInUse(const VmCpuPlacement& placement);

// Whether the request gives vCPU `vcpu` a CPU of its own (online or when brought
// online): the user's pin, or VRI's dedicated or mixed policy.
bool dedicatesVcpu(const VmCpuRequest& request, int vcpu);
// The request a placement changed live answers: a user's pins become the
// placement's; VRI's policy becomes dedicated, mixed or shared by which vCPUs
// hold a CPU now (an offline vCPU keeps what the request gave it), and the
// emulator's by whether it holds one.
void followPlacement(VmCpuRequest& request, const VmCpuPlacement& placement);

// Plans a placement from `available` (the CPUs free for exclusive use). When
// guestThreadsPerCore > 1, guest sibling vCPUs land on host sibling threads
// wherever whole host cores were given. Nothing is recorded: the pool does that.
Result<VmCpuPlacement> planVmCpus(const Topology& topology, const CpuSet& available, const VmCpuRequest& request,
                                  const CpuTakeOptions& options);

}  // namespace vri
