// CpuPool: the node's CPUs as one pool for containers and VM vCPUs.
//
// Reserved CPUs are fixed at creation. Every exclusive CPU belongs to one
// owner (a container, or a VM with its vCPUs, emulator and iothreads); CPUs a
// VM holds back under thread policy isolate belong to it too and are handed
// to nobody. The shared pool is everything else: it never shrinks below
// minSharedCpus, so shared tenants always have somewhere to run.
//
// Every call either succeeds completely or changes nothing.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "accounting/cpu_pools.h"
#include "accounting/cpu_take_options.h"
#include "accounting/topology.h"
#include "accounting/vm_cpu_placement.h"
#include "base/cpuset.h"
#include "base/result.h"

namespace vri {

struct CpuPoolConfig {
  ReservedCpusConfig reserved;
  CpuTakeOptions take;
  // The shared pool never has fewer CPUs than this. The default of 1 keeps
  // the shared pool from ever emptying; callers that know the shared tenants'
  // demand raise it with setMinSharedCpus.
  int minSharedCpus = 1;
};

struct ExclusiveGrant {
  CpuSet cpus;      // owned and in use
  CpuSet heldBack;  // owned and deliberately idle
  CpuSet all() const { return cpus | heldBack; }
};

class CpuPool {
 public:
  static Result<CpuPool> create(std::shared_ptr<const Topology> topology, CpuPoolConfig config);

  const Topology& topology() const { return *topology_; }
  const CpuPoolConfig& config() const { return config_; }
  const CpuSet& reserved() const { return pools_.reserved; }
  // The shared pool as it stands: reserved CPUs included unless strict.
  CpuSet shared() const;
  // The CPUs an exclusive request may still take (ignoring the shared minimum).
  CpuSet freeForExclusive() const;
  // How many CPUs exclusive requests may still take, the shared minimum kept.
  int exclusiveCapacity() const;
  // The same for one request kept within `cpus` (a NUMA node's).
  int exclusiveCapacityWithin(const CpuSet& cpus) const;
  const std::map<std::string, ExclusiveGrant>& grants() const { return grants_; }
  const ExclusiveGrant* grant(const std::string& owner) const;

  // Chooses request.count exclusive CPUs for `owner` and records them, taking
  // from `prefer` first (a container's current CPUs when it is resized, CPUs its
  // pod's init containers no longer use).
  Result<CpuSet> allocate(const std::string& owner, const CpuTakeRequest& request, const CpuSet& prefer = {});
  // Places a VM and records its exclusive and held-back CPUs under `owner`.
  Result<VmCpuPlacement> allocateVm(const std::string& owner, const VmCpuRequest& request);
  // Records CPUs chosen elsewhere (explicit pins, a restored ledger); refuses
  // reserved, offline or already owned CPUs.
  Result<void> assign(const std::string& owner, const ExclusiveGrant& grant);
  // Returns the owner's CPUs to the shared pool.
  Result<void> release(const std::string& owner);

  // Refuses a minimum the shared pool does not hold right now.
  Result<void> setMinSharedCpus(int cpus);
  // Sets the minimum to what the shared tenants need, clamped to what the
  // shared pool holds now, so it cannot fail.
  void followSharedDemand(int cpus);
  // Drops `owner`'s grant, if it has one.
  void releaseOwner(const std::string& owner);
  // Takes shared CPUs out of every pool under `owner` whatever the minimum:
  // CPUs whose last holder's cgroups may still use them.
  void holdBack(const std::string& owner, const CpuSet& cpus);

 private:
  CpuPool(std::shared_ptr<const Topology> topology, CpuPoolConfig config, CpuPools pools)
      : topology_(std::move(topology)), config_(std::move(config)), pools_(std::move(pools)) {}

  Result<void> checkNewOwner(const std::string& owner) const;
  // Refuses taking `count` CPUs when the shared pool would drop below its minimum.
  Result<void> checkSharedMinimum(int count, const std::string& what) const;

  std::shared_ptr<const Topology> topology_;
  CpuPoolConfig config_;
  CpuPools pools_;
  std::map<std::string, ExclusiveGrant> grants_;
  CpuSet owned_;  // union of every grant's CPUs, kept for speed
};

}  // namespace vri
