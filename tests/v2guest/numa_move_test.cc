// moveMemoryAtRate on a real kernel with two NUMA nodes (the node-6.12 guest: nodes 0 and 1, a 2 MiB
// hugepage pool on each): a process's memory, bound to node 0, moved to node 1 at a chosen rate. Its
// 64 MiB mapping is backed by transparent hugepages where the kernel could, so the move's count of
// bytes (what the rate is held to) must see each one moved whole.
// Its pages end on node 1 (its numa_maps), and the move took at least the time the rate implies.
// A process that maps hugetlb pages is refused, its pages where they were. Run by the `numa-move`
// suite, as root (move_pages of another process needs CAP_SYS_NICE).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/mempolicy.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cgroup-model/kernel_cgroupfs.h"
#include "cgroup-model/numa_page_mover.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = 1 << 20;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process whose anonymous mapping of `bytes` (hugetlb pages with `huge`) was faulted in on
// `node`; killed when this goes.
struct Child {
  pid_t pid = -1;
  uintptr_t address = 0;
  Child(int node, size_t bytes, bool huge) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      unsigned long mask = 1UL << node;
      if (::syscall(SYS_set_mempolicy, MPOL_BIND, &mask, sizeof mask * 8) != 0) ::_exit(2);
      void* p =
          ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (huge ? MAP_HUGETLB : 0), -1, 0);
      if (p == MAP_FAILED) ::_exit(3);
      std::memset(p, 1, bytes);
      const uintptr_t at = reinterpret_cast<uintptr_t>(p);
      if (::write(ready[1], &at, sizeof at) != sizeof at) ::_exit(4);
      ::pause();
      ::_exit(0);
    }
    ::close(ready[1]);
    if (::read(ready[0], &address, sizeof address) != sizeof address) address = 0;
    ::close(ready[0]);
  }
  ~Child() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  // The mapping's pages on each node, from numa_maps.
  std::map<int, long> pagesPerNode() const {
    std::map<int, long> pages;
    std::ostringstream start;
    start << std::hex << address << " ";
    std::istringstream lines(readFile("/proc/" + std::to_string(pid) + "/numa_maps"));
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(start.str(), 0) != 0) continue;
      std::istringstream words(line);
      for (std::string word; words >> word;) {
        if (word.size() > 1 && word[0] == 'N' && word.find('=') != std::string::npos)
          pages[std::atoi(word.c_str() + 1)] = std::atol(word.c_str() + word.find('=') + 1);
      }
    }
    return pages;
  }
};

Result<MemoryMoveReport> moveTo(int pid, int node, uint64_t rate) {
  VRI_ASSIGN_OR_RETURN(KernelCgroupFs fs, KernelCgroupFs::create("/sys/fs/cgroup"));
  const auto kernel = kernelPageMigration();
  return moveMemoryAtRate(fs, *kernel, MemoryMoveRequest{{pid}, CpuSet{node}, rate}, steadyClock(),
                          [](Clock::TimePoint when) { std::this_thread::sleep_until(when); });
}

class NumaMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(readFile("/sys/devices/system/node/online"), "0-1\n")
        << "needs a host with NUMA nodes 0 and 1 (the node-6.12 guest)";
  }
};

TEST_F(NumaMoveTest, AProcesssMemoryMovesToTheOtherNodeAndTakesTheTimeTheRateImplies) {
  const size_t bytes = 64 * kMiB;
  const uint64_t rate = 32 * kMiB;  // 2 s for 64 MiB
  Child child(0, bytes, false);
  ASSERT_NE(child.address, 0u);
  const long pages = static_cast<long>(bytes / ::sysconf(_SC_PAGESIZE));
  ASSERT_EQ(child.pagesPerNode()[0], pages);
  const auto started = std::chrono::steady_clock::now();
  const auto report = moveTo(child.pid, 1, rate);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(report.ok()) << report.error().message();
  EXPECT_GE(report->bytesMoved, bytes);
  // What the kernel kept: pages the child still shares with this process since the fork (copy on write).
  EXPECT_LT(report->pagesLeft * ::sysconf(_SC_PAGESIZE), 4 * kMiB);
  const auto implied = std::chrono::duration<double>(static_cast<double>(report->bytesMoved) / rate);
  EXPECT_GE(took, implied);
  const auto after = child.pagesPerNode();
  EXPECT_EQ(after.count(0), 0u);
  EXPECT_EQ(after.count(1) ? after.at(1) : 0, pages);
  std::cout << "moved " << report->bytesMoved / kMiB << " MiB from node 0 to node 1 at " << rate / kMiB << " MiB/s in "
            << std::chrono::duration<double>(took).count() << " s (the rate implies " << implied.count() << " s)\n";
}

TEST_F(NumaMoveTest, AProcessThatMapsHugetlbPagesIsRefusedAndItsPagesStay) {
  Child child(0, 2 * kMiB, true);
  ASSERT_NE(child.address, 0u) << "no 2 MiB hugepage on node 0 (the guest boots with hugepages=64)";
  const auto report = moveTo(child.pid, 1, 32 * kMiB);
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.error().message(), HasSubstr("maps hugetlb pages"));
  EXPECT_EQ(child.pagesPerNode()[0], 1);
}

}  // namespace
}  // namespace vri
