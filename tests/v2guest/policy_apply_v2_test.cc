// A placement policy change applied to a running vrid on the two-node guest (suite `numa-move`, in a
// delegated scope): a Guaranteed container whose memory is bound to one NUMA node, with a live process
// holding 64 MiB there; the reservation grows over that node's CPUs and `vrictl config apply`'s call
// moves the container to the other node. Its pages end there (numa_maps), the move took at least the
// time memory_move_rate implies, its cgroup's cpuset.mems is the new node once they are, and the
// process runs on the container's new CPU (Cpus_allowed_list).
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/cpuset.h"
#include "proto/vri.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/support/self_children.h"
#include "tests/support/temp_dir.h"
#include "tests/v2guest/vrid_subtree_test.h"

namespace vri {
namespace {

using testing::readFile;
using testing::removeCgroupTree;
using testing::trimmed;

constexpr char kPodUid[] = "0e000000-0000-4000-8000-0000000000c1";
constexpr char kContainerId[] = "cd34ef56";

// Pages of `pid`'s mappings of at least `least` pages, by node (numa_maps).
std::map<int, long> largeMappingPages(int pid, long least) {
  std::map<int, long> pages;
  std::istringstream lines(readFile("/proc/" + std::to_string(pid) + "/numa_maps"));
  for (std::string line; std::getline(lines, line);) {
    std::map<int, long> here;
    long total = 0;
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (word.size() > 1 && word[0] == 'N' && word.find('=') != std::string::npos) {
        const long n = std::atol(word.c_str() + word.find('=') + 1);
        here[std::atoi(word.c_str() + 1)] += n;
        total += n;
      }
    }
    if (total < least) continue;
    for (const auto& [node, n] : here) pages[node] += n;
  }
  return pages;
}

class PolicyApplyV2Test : public testing::VridSubtreeTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(readFile("/sys/devices/system/node/online"), "0-1\n") << "needs NUMA nodes 0 and 1 (the node-6.12 guest)";
    VridSubtreeTest::SetUp();
  }
  // The placement policy in vrid's file (what an apply reads again), the rest as flags.
  void configure(const std::string& policy) { std::ofstream(tmp_.sub("vrid.conf")) << policy; }
  void startVrid() {
    const std::string relative = relativeRoot();
    vrid_ = std::make_unique<testing::VridProcess>(
        tmp_, "vrid",
        std::vector<std::string>{"--topology=live", "--ownership=everything", "--kubelet-cgroup-root=" + relative,
                                 "--machine-partition=" + relative.substr(1) + "/machine", "--log-level=debug"});
    ASSERT_TRUE(vrid_->start()) << vrid_->log();
    stub_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
  }
};

TEST_F(PolicyApplyV2Test, AContainersBoundMemoryMovesToItsNewNodeAtTheRate) {
  configure("reserved_cpus = 0\npin_guaranteed_memory = true\nmemory_move_rate = 32\n");
  ASSERT_NO_FATAL_FAILURE(startVrid());
  v1::AdmitContainerRequest request;
  request.set_pod_uid(kPodUid);
  request.set_pod_name("numa/db");
  request.set_qos(v1::GUARANTEED);
  request.set_container_name("db");
  request.set_container_id(kContainerId);
  request.set_cpu_request_milli(1000);
  request.set_cpu_limit_milli(1000);
  request.set_memory_limit_bytes(256ULL << 20);
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  const grpc::Status admitted = stub_->AdmitContainer(&c1, request, &placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message() << "\n" << vrid_->log();
  const CpuSet from = *CpuSet::parse(placed.cpuset_mems());
  ASSERT_EQ(from.count(), 1) << placed.cpuset_mems();
  const int was = *from.begin(), to = 1 - was;
  const std::string cgroup = root_ + "/kubepods/pod" + kPodUid + "/" + kContainerId;
  ASSERT_EQ(trimmed(readFile(cgroup + "/cpuset.mems")), std::to_string(was));

  // Its process: 64 MiB, on the container's node once it joins (cgroup v2 moves a joining task's pages).
  const pid_t holder = testing::spawnSelf("db", {"--vri-hold-memory", "64"});
  children_.push_back(holder);
  ASSERT_TRUE(testing::eventually(
      [&] { return largeMappingPages(holder, 16000)[0] + largeMappingPages(holder, 16000)[1] >= 16384; }));
  std::ofstream(cgroup + "/cgroup.procs") << holder;
  ASSERT_TRUE(testing::eventually([&] {
    const auto pages = largeMappingPages(holder, 16000);
    return pages.count(to) == 0 && pages.count(was) && pages.at(was) >= 16384;
  })) << readFile("/proc/" + std::to_string(holder) + "/numa_maps");

  EXPECT_EQ(testing::statusField(holder, "Cpus_allowed_list"), placed.cpuset_cpus());

  // The reservation grows over the container's node: it moves to the other one, and its memory with it.
  std::ostringstream grown;
  grown << "reserved_cpus = " << (was == 0 ? "0-1" : "0,2-3")
        << "\npin_guaranteed_memory = true\nmemory_move_rate = 32\n";
  configure(grown.str());
  grpc::ClientContext c2;
  v1::ApplyConfigRequest apply;
  v1::ConfigDiffReply applied;
  const auto started = std::chrono::steady_clock::now();
  const grpc::Status status = stub_->ApplyConfig(&c2, apply, &applied);
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(status.ok()) << status.error_message() << "\n" << vrid_->log();
  ASSERT_EQ(applied.tenants_size(), 1);
  EXPECT_EQ(applied.tenants(0).mems_after(), std::to_string(to));
  const auto pages = largeMappingPages(holder, 16000);
  EXPECT_EQ(pages.count(was), 0u) << readFile("/proc/" + std::to_string(holder) + "/numa_maps");
  EXPECT_GE(pages.count(to) ? pages.at(to) : 0, 16384);
  EXPECT_GE(took, std::chrono::seconds(2));  // 64 MiB at 32 MiB/s
  EXPECT_EQ(trimmed(readFile(cgroup + "/cpuset.mems")), std::to_string(to));
  // Its CPU followed, as the process runs.
  EXPECT_EQ(testing::statusField(holder, "Cpus_allowed_list"), applied.tenants(0).cpus_after());
  EXPECT_NE(applied.tenants(0).cpus_after(), placed.cpuset_cpus());
  EXPECT_THAT(vrid_->log(), ::testing::HasSubstr("MiB of memory moved in"));
  std::cout << "apply with 64 MiB to move at 32 MiB/s took " << std::chrono::duration<double>(took).count() << " s\n";
}

}  // namespace
}  // namespace vri
