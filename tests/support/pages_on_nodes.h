// A kernel stand-in for move_pages(2): pages by process and address, each on a node (the real
// kernel's is tested in the two-node v2 guest, tests/v2guest/numa_move_test.cc).
#pragma once

#include <cerrno>
#include <map>
#include <set>

#include "cgroup-model/numa_page_mover.h"

namespace vri::testing {

// A page in `pinned` stays where it is (the kernel keeps pages another process maps too).
class PagesOnNodes : public PageMigration {
 public:
  static constexpr size_t kPage = 4096;
  size_t pageSize() const override { return kPage; }
  Result<void> movePages(int pid, const std::vector<uintptr_t>& pages, const std::vector<int>* nodes,
                         std::vector<int>& status) override {
    ++calls;
    if (gone.count(pid)) return Error(ErrorCode::kNotFound, "move_pages: No such process");
    status.assign(pages.size(), -ENOENT);
    for (size_t i = 0; i < pages.size(); ++i) {
      auto page = where[pid].find(pages[i]);
      if (page == where[pid].end()) continue;
      if (nodes != nullptr && !pinned.count(pages[i])) page->second = (*nodes)[i];
      status[i] = page->second;
    }
    return {};
  }
  std::map<int, std::map<uintptr_t, int>> where;
  std::set<uintptr_t> pinned;
  std::set<int> gone;
  int calls = 0;
};

}  // namespace vri::testing
