// moveMemoryAtRate against a kernel stand-in (the pages' nodes in a map; the real kernel's move_pages
// is tested in the two-node v2 guest, tests/v2guest/numa_move_test.cc) and /proc files on the fixture:
// what moves, what is counted, the pauses that hold the rate, and the refusals.
#include "cgroup-model/numa_page_mover.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "cgroup-model/fixture_cgroupfs.h"
#include "tests/support/manual_clock.h"
#include "tests/support/pages_on_nodes.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr size_t kPage = testing::PagesOnNodes::kPage;

class NumaPageMoverTest : public ::testing::Test {
 protected:
  NumaPageMoverTest()
      : fs_(std::move(FixtureCgroupFs::createV2(tmp_.sub("fx"), *CpuSet::parse("0-3"), *CpuSet::parse("0-1")))
                .value()) {}

  // Process `pid` with one anonymous mapping of `pages` pages at 0x10000, all on `node`, and its /proc
  // files saying so (`extra`: more numa_maps lines).
  void process(int pid, int pages, int node, const std::string& extra = "") {
    const uintptr_t start = 0x10000;
    for (int i = 0; i < pages; ++i) kernel_.where[pid][start + i * kPage] = node;
    char range[64];
    std::snprintf(range, sizeof range, "%lx-%lx", static_cast<unsigned long>(start),
                  static_cast<unsigned long>(start + pages * kPage));
    ASSERT_TRUE(fs_.setProcFile(std::to_string(pid) + "/maps", std::string(range) + " rw-p 00000000 00:00 0 \n" +
                                                                   "7ffd0000-7ffd1000 ---p 00000000 00:00 0 \n")
                    .ok());
    ASSERT_TRUE(fs_.setProcFile(std::to_string(pid) + "/numa_maps",
                                "10000 default anon=" + std::to_string(pages) + " dirty=" + std::to_string(pages) +
                                    " N" + std::to_string(node) + "=" + std::to_string(pages) +
                                    " kernelpagesize_kB=4\n" + extra)
                    .ok());
  }
  Result<MemoryMoveReport> move(std::vector<int> pids, const std::string& to, uint64_t rate, size_t batch = 16) {
    MemoryMoveRequest request{std::move(pids), *CpuSet::parse(to), rate, batch};
    return moveMemoryAtRate(fs_, kernel_, request, clock_, [this](Clock::TimePoint when) {
      ++pauses_;
      clock_.advanceTo(when);
    });
  }
  int onNode(int pid, int node) {
    int count = 0;
    for (const auto& [page, at] : kernel_.where[pid]) count += at == node;
    return count;
  }

  testing::TempDir tmp_;
  FixtureCgroupFs fs_;
  testing::PagesOnNodes kernel_;
  testing::ManualClock clock_;
  int pauses_ = 0;
};

TEST_F(NumaPageMoverTest, EveryPageMovesAndTheMoveTakesTheTimeTheRateImplies) {
  process(100, 256, 0);                              // 1 MiB
  const auto report = move({100}, "1", 256 * 1024);  // 256 KiB/s: 4 s
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(onNode(100, 1), 256);
  EXPECT_EQ(report->bytesMoved, 256 * kPage);
  EXPECT_EQ(report->pagesLeft, 0u);
  EXPECT_GE(report->took, std::chrono::seconds(4));
  EXPECT_LT(report->took, std::chrono::milliseconds(4100));
  EXPECT_EQ(pauses_, 256 / 16);  // one after each batch
}

TEST_F(NumaPageMoverTest, PagesAlreadyThereOrNotPresentCostNothingAndPagesTheKernelKeepsAreCounted) {
  process(100, 64, 1);
  kernel_.where[100].erase(0x10000);            // not present
  kernel_.where[100][0x10000 + kPage] = 0;      // one off the target
  kernel_.where[100][0x10000 + 2 * kPage] = 0;  // another, which the kernel keeps
  kernel_.pinned.insert(0x10000 + 2 * kPage);
  ASSERT_TRUE(fs_.setProcFile("100/numa_maps", "10000 default anon=63 N0=2 N1=61\n").ok());
  const auto report = move({100}, "1", 1 << 20);
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->bytesMoved, kPage);
  EXPECT_EQ(report->pagesLeft, 1u);
  EXPECT_EQ(onNode(100, 0), 1);
}

TEST_F(NumaPageMoverTest, AMappingWithNoPageOffTheTargetIsNotAskedAbout) {
  process(100, 64, 1);
  ASSERT_TRUE(move({100}, "1", 1 << 20).ok());
  EXPECT_EQ(kernel_.calls, 0);
}

TEST_F(NumaPageMoverTest, HugetlbPagesRefuseTheMoveBeforeAnyPageMoves) {
  process(100, 64, 0);
  process(200, 64, 0,
          "7f0000000000 default file=/anon_hugepage\\040(deleted) huge dirty=1 N0=1 kernelpagesize_kB=2048\n");
  const auto report = move({100, 200}, "1", 1 << 20);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(report.error().message(), HasSubstr("process 200 maps hugetlb pages"));
  EXPECT_EQ(onNode(100, 0), 64);  // the first process's pages too
  EXPECT_EQ(kernel_.calls, 0);
}

TEST_F(NumaPageMoverTest, AProcessThatExitsIsCountedAndTheOthersStillMove) {
  process(100, 32, 0);
  process(200, 32, 0);
  kernel_.gone.insert(100);
  const auto report = move({100, 200, 300}, "1", 1 << 20);  // 300: no /proc files at all
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_EQ(report->processesGone, 2);
  EXPECT_EQ(onNode(200, 1), 32);
}

TEST_F(NumaPageMoverTest, PagesSpreadOverSeveralTargetNodesAndBadRequestsAreRefused) {
  ASSERT_TRUE(fs_.setProcFile("100/maps", "").ok());
  process(100, 64, 0);
  ASSERT_TRUE(move({100}, "1-2", 1 << 20).ok());
  EXPECT_EQ(onNode(100, 1), 32);
  EXPECT_EQ(onNode(100, 2), 32);
  EXPECT_EQ(move({100}, "1", 0).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(move({100}, "", 1 << 20).error().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace vri
