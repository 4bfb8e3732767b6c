// vrid's usage sampler: one thread that reads every tenant's usage files and /proc/stat once per
// interval and keeps the last `history` rounds (UsageFrame) in memory.
//
// It takes the ledger's published state (Ledger::state(), O(1)), never the decisions' writer lock:
// sampling never waits for a decision and no decision waits for it. Files are kept open
// (CgroupFs::keepOpen): a round is one pread per file. The set of files follows the ledger: when the
// state changes, tenants that went are closed and new ones opened; a file that fails to read (its
// cgroup removed) is closed and opened again in a later round. Reads only: the sampler is given a
// const CgroupFs and writes nothing, whichever hierarchies it reads (the v1 memory hierarchy
// included, where vrid may be kept from creating anything).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <thread>

#include "accounting/ledger_state.h"
#include "base/clock.h"
#include "base/thread_annotations.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/cgroupfs.h"
#include "cgroup-model/kubelet_namer.h"
#include "cgroup-model/node_tree.h"
#include "vri/logger.h"
#include "vri/usage_frame.h"

namespace vri {

// Where the usage files of a cgroup live, by hierarchy ("" on v2).
struct UsageSources {
  CgroupVersion version = CgroupVersion::kV2;
  std::string cpu;                     // cpu.stat (v2: also the CPU time)
  std::string cpuacct;                 // v1: cpuacct.usage
  std::optional<std::string> unified;  // v1 on a hybrid host: the unified hierarchy, for CPU time cpuacct lacks
  std::optional<std::string> memory;   // nullopt: memory not read
};

// The hierarchies on this host; `readV1Memory` false leaves the v1 memory hierarchy unread.
Result<UsageSources> findUsageSources(const CgroupFs& fs, const std::string& cgroupRoot, CgroupVersion version,
                                      bool readV1Memory);

struct UsageSamplerOptions {
  std::chrono::milliseconds interval{1000};
  size_t history = 60;        // rounds kept, the latest included
  long ticksPerSecond = 100;  // USER_HZ, for /proc/stat
};

// What the sampler costs, for the benchmark and the log.
struct SamplerStats {
  uint64_t rounds = 0;
  size_t tenants = 0;
  size_t filesOpen = 0;      // kept open
  size_t filesReopened = 0;  // opened per read (the open-file limit reached)
  std::chrono::microseconds lastRound{0};
  std::chrono::nanoseconds threadCpu{0};  // the sampling thread's own CPU time so far (its waits included)
};

class UsageSampler {
 public:
  // `state` is the ledger's current state (NodeManager::state); `fs` and `clock` outlive the sampler.
  UsageSampler(const CgroupFs& fs, UsageSources sources, const TreeLayout& layout, std::function<StatePtr()> state,
               UsageSamplerOptions options, const Clock& clock, Logger& log);
  ~UsageSampler();
  UsageSampler(const UsageSampler&) = delete;
  UsageSampler& operator=(const UsageSampler&) = delete;

  // The thread: a round now, then one per interval, until stop().
  void start();
  // Ends the thread and wakes every waiter (next() returns null). Idempotent.
  void stop();
  // One round on the caller's thread (tests and benchmarks drive it without the thread).
  void sampleOnce();

  const UsageSamplerOptions& options() const { return options_; }
  FramePtr latest() const;
  // The last `count` frames kept, the latest first.
  std::vector<FramePtr> recent(size_t count) const;
  // The first frame after `sequence`, waiting up to `timeout` (real time) for it; null on timeout or stop.
  FramePtr next(uint64_t sequence, std::chrono::milliseconds timeout) const;
  SamplerStats stats() const;
  bool stopped() const {
    MutexLock lock(mutex_);
    return stopping_;
  }

 private:
  struct TenantFiles {
    std::shared_ptr<const TenantLabel> label;
    std::unique_ptr<KeptFile> cpuStat, memory;
    std::unique_ptr<KeptFile> cpuacct;  // v1's CPU time: cpuacct.usage, or the unified hierarchy's cpu.stat
    bool cpuFromUnified = false;        // cpuacct holds the unified hierarchy's cpu.stat
    bool opened = false;                // tried this far: files kept, or the cgroup is not there yet
    bool reopened = false;              // read through the path each time (the open-file limit)
    uint64_t memoryTriedAt = 0;         // the round memory's file was last looked for
    CpuCounters last;
    Clock::TimePoint lastAt{};
    bool haveLast = false;
  };
  struct CpuFiles {
    std::unique_ptr<KeptFile> stat;
    std::map<int, CpuTime> last;
    Clock::TimePoint lastAt{};
  };
  void run();
  // Brings the tenant set in line with `state`.
  void follow(const LedgerState& state);
  // A missing memory file is looked for again after this many rounds.
  static constexpr uint64_t kMemoryRetryRounds = 10;
  void open(TenantFiles& t);
  void openMemory(TenantFiles& t);
  Result<std::unique_ptr<KeptFile>> keep(const CgroupDir& dir, const char* file, bool& reopened) const;
  TenantSample read(TenantFiles& t, Clock::TimePoint now);
  std::vector<CpuSample> readCpus(Clock::TimePoint now);

  const CgroupFs& fs_;
  const UsageSources sources_;
  const std::unique_ptr<KubeletNamer> namer_;
  const std::function<StatePtr()> state_;
  const UsageSamplerOptions options_;
  const Clock& clock_;
  Logger& log_;

  // The sampling thread's own (or sampleOnce's caller's): never touched by readers.
  StatePtr followed_;
  std::map<std::string, TenantFiles> tenants_;
  CpuFiles cpus_;
  uint64_t sequence_ = 0;
  mutable bool warnedFileLimit_ = false;

  mutable Mutex mutex_;
  mutable std::condition_variable_any published_;
  std::deque<FramePtr> frames_ VRI_GUARDED_BY(mutex_);  // the latest at the back
  SamplerStats stats_ VRI_GUARDED_BY(mutex_);
  bool stopping_ VRI_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace vri
