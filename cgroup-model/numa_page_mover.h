// Moves processes' memory from some NUMA nodes to others at a bounded rate. A cgroup's cpuset.mems
// write moves every page of its tasks at once (cgroup v2; v1 with cpuset.memory_migrate), and the
// node stalls on that copy while it runs. Here the pages go in batches through move_pages(2), each
// batch first asked where its pages are so that only present pages off the target are moved and
// counted, and a pause after each batch holds the bytes moved to the rate: a move of B bytes takes at
// least B / rate. Pages the kernel keeps where they are (shared with another process, locked) are
// counted as left. A process that maps hugetlb pages is refused before anything moves: hugetlb pages
// come from per-node pools that hold no spare to move into, and the tenant is the operator's to move.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/clock.h"
#include "base/cpuset.h"
#include "base/result.h"
#include "cgroup-model/cgroupfs.h"

namespace vri {

// The kernel's move_pages(2), behind a seam for unit tests.
class PageMigration {
 public:
  virtual ~PageMigration() = default;
  virtual size_t pageSize() const = 0;
  // Where each page of `pid` is: a node id, or a negative errno (-ENOENT: not present). With `nodes`,
  // each page is moved to its node first, and `status` says where it is after.
  virtual Result<void> movePages(int pid, const std::vector<uintptr_t>& pages, const std::vector<int>* nodes,
                                 std::vector<int>& status) = 0;
};
std::unique_ptr<PageMigration> kernelPageMigration();

struct MemoryMoveRequest {
  std::vector<int> pids;
  CpuSet toNodes;               // where the pages go: every present page off these moves
  uint64_t bytesPerSecond = 0;  // the rate; 0: refused
  // Pages asked about and moved per call, batches aligned to their span: 512 pages of 4 KiB is a
  // transparent hugepage's 2 MiB, which the kernel moves whole (a multiple of it keeps one in a batch).
  size_t batchPages = 512;
};

struct MemoryMoveReport {
  uint64_t bytesMoved = 0;
  uint64_t pagesLeft = 0;  // present pages off the target that the kernel did not move
  int processesGone = 0;   // exited while they were moved
  Clock::Duration took{0};
};

// Waits until a point on the clock: the pause that holds the rate (tests advance their clock).
using SleepUntil = std::function<void(Clock::TimePoint)>;

// `proc` reads /proc/<pid>/maps and numa_maps.
Result<MemoryMoveReport> moveMemoryAtRate(const CgroupFs& proc, PageMigration& kernel, const MemoryMoveRequest& request,
                                          const Clock& clock, const SleepUntil& sleepUntil);

}  // namespace vri
