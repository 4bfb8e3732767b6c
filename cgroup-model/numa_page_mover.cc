#include "cgroup-model/numa_page_mover.h"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sstream>

#include "base/text.h"

namespace vri {

namespace {

class KernelPageMigration final : public PageMigration {
 public:
  size_t pageSize() const override { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }
  Result<void> movePages(int pid, const std::vector<uintptr_t>& pages, const std::vector<int>* nodes,
                         std::vector<int>& status) override {
    status.assign(pages.size(), 0);
    std::vector<void*> addresses(pages.size());
    for (size_t i = 0; i < pages.size(); ++i) addresses[i] = reinterpret_cast<void*>(pages[i]);
    // MPOL_MF_MOVE: only pages this process alone maps; shared ones stay where they are.
    const long done = ::syscall(SYS_move_pages, pid, static_cast<unsigned long>(pages.size()), addresses.data(),
                                nodes != nullptr ? nodes->data() : nullptr, status.data(), MPOL_MF_MOVE);
    if (done < 0) return Error::fromErrno(errno, "move_pages of process " + std::to_string(pid));
    return {};
  }
};

struct Mapping {
  uintptr_t start = 0, end = 0;
};

// The mappings of `pid` worth asking about: readable ones with pages off `toNodes` (numa_maps' N<node>=
// counts). Refused when one is hugetlb.
Result<std::vector<Mapping>> mappingsToMove(const CgroupFs& proc, int pid, const CpuSet& toNodes) {
  const std::string id = std::to_string(pid);
  VRI_ASSIGN_OR_RETURN(const std::string numaMaps, proc.readProc(id + "/numa_maps"));
  std::map<uintptr_t, bool> offTarget;  // by start address
  for (const std::string_view line : splitOn(numaMaps, '\n')) {
    std::istringstream words{std::string(line)};
    std::string address, word;
    if (!(words >> address)) continue;
    bool off = false;
    while (words >> word) {
      if (word == "huge")
        return Error::failedPrecondition("process " + id + " maps hugetlb pages at " + address +
                                         ": hugepage-backed memory is not moved");
      if (word.size() > 1 && word[0] == 'N' && word.find('=') != std::string::npos) {
        const int node = std::atoi(word.c_str() + 1);
        if (!toNodes.contains(node)) off = true;
      }
    }
    offTarget[std::strtoull(address.c_str(), nullptr, 16)] = off;
  }
  VRI_ASSIGN_OR_RETURN(const std::string maps, proc.readProc(id + "/maps"));
  std::vector<Mapping> out;
  for (const std::string_view line : splitOn(maps, '\n')) {
    std::istringstream words{std::string(line)};
    std::string range, perms;
    if (!(words >> range >> perms) || perms.empty() || perms[0] != 'r') continue;
    const size_t dash = range.find('-');
    if (dash == std::string::npos) continue;
    const Mapping m{std::strtoull(range.substr(0, dash).c_str(), nullptr, 16),
                    std::strtoull(range.substr(dash + 1).c_str(), nullptr, 16)};
    const auto known = offTarget.find(m.start);
    if (known != offTarget.end() && known->second && m.end > m.start) out.push_back(m);
  }
  return out;
}

// ESRCH (and ENOENT of its /proc files): the process exited meanwhile.
bool processGone(const Error& error) { return error.code() == ErrorCode::kNotFound; }

}  // namespace

std::unique_ptr<PageMigration> kernelPageMigration() { return std::make_unique<KernelPageMigration>(); }

Result<MemoryMoveReport> moveMemoryAtRate(const CgroupFs& proc, PageMigration& kernel, const MemoryMoveRequest& request,
                                          const Clock& clock, const SleepUntil& sleepUntil) {
  if (request.bytesPerSecond == 0) return Error::invalidArgument("a memory move needs a rate above 0");
  if (request.toNodes.empty()) return Error::invalidArgument("a memory move needs the nodes it goes to");
  if (request.batchPages == 0) return Error::invalidArgument("a memory move needs pages per batch above 0");
  // Every process's mappings first: a hugetlb one refuses the move before any page has moved.
  std::vector<std::pair<int, std::vector<Mapping>>> work;
  MemoryMoveReport report;
  for (int pid : request.pids) {
    auto mappings = mappingsToMove(proc, pid, request.toNodes);
    if (!mappings.ok()) {
      if (!processGone(mappings.error())) return mappings.error();
      ++report.processesGone;
      continue;
    }
    work.emplace_back(pid, std::move(*mappings));
  }
  const std::vector<int> targets(request.toNodes.begin(), request.toNodes.end());
  const size_t page = kernel.pageSize();
  const Clock::TimePoint start = clock.now();
  size_t nextTarget = 0;
  std::vector<uintptr_t> batch, off;
  std::vector<int> status, nodes;
  for (const auto& [pid, mappings] : work) {
    bool gone = false;
    for (const Mapping& m : mappings) {
      for (uintptr_t at = m.start; at < m.end && !gone;) {
        // Batches end on multiples of their span in the address space: a transparent hugepage (2 MiB,
        // naturally aligned) is moved whole when its first page is, so it must lie in one batch for
        // its pages to be asked about before and counted after.
        const uintptr_t span = request.batchPages * page;
        const uintptr_t stop = std::min(m.end, (at / span + 1) * span);
        batch.clear();
        for (; at < stop; at += page) batch.push_back(at);
        if (auto asked = kernel.movePages(pid, batch, nullptr, status); !asked.ok()) {
          if (!processGone(asked.error())) return asked.error();
          gone = true;
          break;
        }
        off.clear();
        nodes.clear();
        for (size_t i = 0; i < batch.size(); ++i) {
          if (status[i] < 0 || request.toNodes.contains(status[i])) continue;  // not present, or there already
          off.push_back(batch[i]);
          nodes.push_back(targets[nextTarget++ % targets.size()]);
        }
        if (off.empty()) continue;
        if (auto moved = kernel.movePages(pid, off, &nodes, status); !moved.ok()) {
          if (!processGone(moved.error())) return moved.error();
          gone = true;
          break;
        }
        // Where they are now, asked again: the status a move reports is not always where a page went
        // (on the node-6.12 guest, 14 pages of 16384 in transparent hugepages read as not moved).
        if (auto asked = kernel.movePages(pid, off, nullptr, status); !asked.ok()) {
          if (!processGone(asked.error())) return asked.error();
          gone = true;
          break;
        }
        for (size_t i = 0; i < off.size(); ++i) {
          if (status[i] >= 0 && request.toNodes.contains(status[i])) {
            report.bytesMoved += page;
          } else {
            ++report.pagesLeft;
          }
        }
        // Hold the rate: the bytes moved so far take at least their share of time.
        const auto due = start + std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(
                                     static_cast<double>(report.bytesMoved) / request.bytesPerSecond));
        if (clock.now() < due) sleepUntil(due);
      }
      if (gone) break;
    }
    if (gone) ++report.processesGone;
  }
  report.took = clock.now() - start;
  return report;
}

}  // namespace vri
