// vrid on the guest's real cgroup v2 hierarchy (suite `vrid`): it owns
// everything below a subtree of the delegated scope (no kubelet, no libvirt).
// A Burstable pod and a dedicated VM with live processes are placed, the
// shared pool shrinks and grows under the running process, and a restart
// adopts both and finds nothing to repair.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
using testing::VridProcess;

constexpr char kPodUid[] = "0e000000-0000-4000-8000-0000000000b1";
constexpr char kVmUuid[] = "0e000000-0000-4000-8000-0000000000f1";

// A one-vCPU VM of `bytes` memory.
v1::AdmitVmRequest vmRequest(v1::VmCpuPolicy policy, uint64_t bytes, uint64_t hugepageSize = 0) {
  v1::AdmitVmRequest vm;
  vm.set_uuid(kVmUuid);
  vm.set_name("vm1");
  vm.set_vcpus(1);
  vm.set_cpu_policy(policy);
  vm.set_memory_bytes(bytes);
  vm.set_hugepage_size(hugepageSize);
  return vm;
}

// The Burstable container `web` (a quarter of a CPU, at most half; 64 MiB) of pod usage/web.
v1::AdmitContainerRequest burstableWeb() {
  v1::AdmitContainerRequest web;
  web.set_pod_uid(kPodUid);
  web.set_pod_name("usage/web");
  web.set_qos(v1::BURSTABLE);
  web.set_container_name("web");
  web.set_container_id("ab12cd34");
  web.set_cpu_request_milli(250);
  web.set_cpu_limit_milli(500);
  web.set_memory_limit_bytes(64ULL << 20);
  return web;
}

class VridV2Test : public testing::VridSubtreeTest {
 protected:
  void startVrid(std::vector<std::string> extra = {}) {
    const std::string relative = relativeRoot();
    std::vector<std::string> flags{"--topology=live",
                                   "--ownership=everything",
                                   "--kubelet-cgroup-root=" + relative,
                                   "--machine-partition=" + relative.substr(1) + "/machine",
                                   "--system-reserved-cpu=1",
                                   "--log-level=debug"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    vrid_ = std::make_unique<VridProcess>(tmp_, "vrid", std::move(flags));
    ASSERT_TRUE(vrid_->start()) << vrid_->log();
    // A channel of its own subchannels: one shared from gRPC's global pool may still be the stopped
    // vrid's connection, and the restarted vrid's first call would fail on it ("Broken pipe").
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stub_ = v1::Vri::NewStub(
        grpc::CreateCustomChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials(), arguments));
  }
  void stopVrid() {
    stub_.reset();
    EXPECT_EQ(vrid_->stop(), 0) << vrid_->log();
    vrid_.reset();
  }
  // A child that looks like QEMU for this VM to the scanner (argv[0] and -uuid).
  int spawn(std::vector<std::string> args) {
    const pid_t pid = testing::spawnAsQemu(kVmUuid, std::move(args));
    children_.push_back(pid);
    return pid;
  }
  void write(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value;
    out.flush();
    ASSERT_TRUE(out.good()) << "write " << value << " to " << path;
  }
  // A QEMU process in a scope as libvirt makes it on v2 (no systemd layout):
  // cpuset and cpu delegated down to the threaded emulator and vCPU groups.
  int startQemu(const std::string& scope, std::vector<std::string> mode) {
    write(root_ + "/machine/cgroup.subtree_control", "+cpuset +cpu");
    for (const std::string& group : {scope, scope + "/emulator", scope + "/vcpu0"}) {
      EXPECT_EQ(::mkdir((root_ + "/" + group).c_str(), 0755), 0) << group;
    }
    write(root_ + "/" + scope + "/emulator/cgroup.type", "threaded");
    write(root_ + "/" + scope + "/vcpu0/cgroup.type", "threaded");
    write(root_ + "/" + scope + "/cgroup.subtree_control", "+cpuset +cpu");
    const int qemu = spawn(mode);
    write(root_ + "/" + scope + "/cgroup.procs", std::to_string(qemu));
    write(root_ + "/" + scope + "/emulator/cgroup.threads", std::to_string(qemu));
    return qemu;
  }
  bool vmStarted(const char* uuid, int pid) {
    grpc::ClientContext context;
    v1::VmStartedRequest started;
    started.set_uuid(uuid);
    started.set_qemu_pid(pid);
    v1::VmStartedReply where;
    const grpc::Status status = stub_->VmStarted(&context, started, &where);
    EXPECT_TRUE(status.ok()) << status.error_message() << vrid_->log();
    return status.ok();
  }
  std::string cpus(const std::string& group) {
    return trimmed(readFile(root_ + "/" + group + "/cpuset.cpus.effective"));
  }
  v1::ReconcileReply reconcile(bool dryRun) {
    grpc::ClientContext context;
    v1::ReconcileRequest request;
    request.set_dry_run(dryRun);
    v1::ReconcileReply reply;
    const grpc::Status status = stub_->Reconcile(&context, request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_code() << " " << status.error_message() << "\n" << vrid_->log();
    return reply;
  }
};

TEST_F(VridV2Test, PodsAndVmsArePlacedThePoolMovesAndARestartFindsNothingToRepair) {
  ASSERT_NO_FATAL_FAILURE(startVrid());
  EXPECT_EQ(cpus("kubepods/burstable"), "0-1");  // created by vrid, on v2

  // A Burstable container with a live process.
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  const grpc::Status admitted = stub_->AdmitContainer(&c1, burstableWeb(), &placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message() << "\n" << vrid_->log();
  const std::string container = "kubepods/burstable/pod" + std::string(kPodUid) + "/ab12cd34";
  const int busy = spawn({"--vri-busy"});
  ASSERT_NO_FATAL_FAILURE(write(root_ + "/" + container + "/cgroup.procs", std::to_string(busy)));
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), "0-1");
  EXPECT_EQ(trimmed(readFile(root_ + "/" + container + "/cpu.max")), "50000 100000");
  EXPECT_EQ(trimmed(readFile(root_ + "/" + container + "/memory.max")), std::to_string(64ULL << 20));
  EXPECT_EQ(trimmed(readFile(root_ + "/" + container + "/cpu.weight")),
            placed.cpu_weight() > 0 ? std::to_string(placed.cpu_weight()) : "?");

  // A dedicated VM whose QEMU runs in a scope libvirt would have made (no systemd layout).
  grpc::ClientContext c2;
  v1::VmAllocation allocation;
  const grpc::Status vm_admitted = stub_->AdmitVm(&c2, vmRequest(v1::DEDICATED, 64ULL << 20), &allocation);
  ASSERT_TRUE(vm_admitted.ok()) << vm_admitted.error_message() << "\n" << vrid_->log();
  ASSERT_EQ(allocation.vcpu_cpus(0), 1);
  const std::string scope = "machine/qemu-1-vm1.libvirt-qemu";
  const int qemu = startQemu(scope, {"--vri-sleeper"});
  ASSERT_TRUE(vmStarted(kVmUuid, qemu));
  EXPECT_EQ(cpus(scope + "/vcpu0"), "1");
  // The shared pool shrank under the running container.
  EXPECT_EQ(cpus("kubepods/burstable"), "0");
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), "0");
  // The vCPU thread lands on its exclusive CPU.
  ASSERT_NO_FATAL_FAILURE(write(root_ + "/" + scope + "/vcpu0/cgroup.threads", std::to_string(qemu)));
  EXPECT_EQ(testing::statusField(qemu, "Cpus_allowed_list"), "1");

  // A restart on the same ledger adopts both and has nothing to repair.
  ASSERT_NO_FATAL_FAILURE(stopVrid());
  ASSERT_NO_FATAL_FAILURE(startVrid());
  const v1::ReconcileReply after_restart = reconcile(true);
  EXPECT_TRUE(after_restart.operations().empty()) << after_restart.operations(0) << "\n" << vrid_->log();
  EXPECT_EQ(cpus(scope + "/vcpu0"), "1");

  // The VM goes: the shared pool grows back under the container.
  grpc::ClientContext c4;
  v1::ReleaseVmRequest release;
  release.set_uuid(kVmUuid);
  v1::Released released;
  ASSERT_TRUE(stub_->ReleaseVm(&c4, release, &released).ok());
  EXPECT_EQ(cpus("kubepods/burstable"), "0-1");
  EXPECT_EQ(testing::statusField(busy, "Cpus_allowed_list"), "0-1");
}

// Usage on the real v2 kernel: a pod with a spinning process held to half a CPU and one holding
// 24 MiB, as vrid samples them from cpu.stat and memory.current.
TEST_F(VridV2Test, APodsCpuThrottlingAndMemoryAreMeasured) {
  ASSERT_NO_FATAL_FAILURE(startVrid({"--usage-interval-ms=500"}));
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(stub_->AdmitContainer(&c1, burstableWeb(), &placed).ok()) << vrid_->log();
  const std::string pod = "kubepods/burstable/pod" + std::string(kPodUid);
  for (const std::vector<std::string>& mode : {std::vector<std::string>{"--vri-busy"}, {"--vri-hold-memory", "24"}})
    ASSERT_NO_FATAL_FAILURE(write(root_ + "/" + pod + "/ab12cd34/cgroup.procs", std::to_string(spawn(mode))));
  // The pod's own cpu.max carries its containers' limits (VRI writes kubelet's pod values here).
  const bool pod_limited = trimmed(readFile(root_ + "/" + pod + "/cpu.max")) != "max 100000";
  v1::UsageReport report;
  const v1::TenantUsage* t = nullptr;
  ASSERT_TRUE(testing::eventually(
      [&] {
        grpc::ClientContext c;
        if (!stub_->GetUsage(&c, {}, &report).ok() || report.samples().empty()) return false;
        t = nullptr;
        for (const v1::TenantUsage& u : report.samples(0).tenants())
          if (u.tenant() == std::string("pod/") + kPodUid) t = &u;
        return t != nullptr && t->rates() && t->cpu_cores() > 0.3 && t->memory_bytes() >= (24ULL << 20);
      },
      std::chrono::seconds(60 * testing::timeScale() / 10)))
      << report.DebugString() << vrid_->log();
  EXPECT_LE(t->cpu_cores(), 0.65) << "held to half a CPU";
  EXPECT_TRUE(t->memory_measured());
  EXPECT_LE(t->memory_bytes(), 64ULL << 20);
  if (pod_limited) {
    EXPECT_GT(t->throttled_periods_total(), 0u) << report.DebugString();
    EXPECT_GT(t->throttled_fraction(), 0.3) << report.DebugString();
  }
  EXPECT_EQ(t->cgroup(), root_.substr(std::string("/sys/fs/cgroup/").size()) + "/" + pod);
  ASSERT_EQ(report.samples(0).cpus_size(), 2);
}

TEST_F(VridV2Test, AHugepageVmGetsItsPagesOnOneNodeAndNoMore) {
  // The guest has 32 pages of 2 MiB on each node; the VM asks for 8 (16 MiB).
  ASSERT_NO_FATAL_FAILURE(startVrid());
  grpc::ClientContext c1;
  v1::VmAllocation allocation;
  const grpc::Status admitted = stub_->AdmitVm(&c1, vmRequest(v1::SHARED, 16ULL << 20, 2ULL << 20), &allocation);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message() << vrid_->log();
  const CpuSet mems = *CpuSet::parse(allocation.cpuset_mems());
  ASSERT_EQ(mems.count(), 1) << "hugepages make the VM NUMA-bound to one node";
  const std::string scope = "machine/qemu-1-vm1.libvirt-qemu";
  const int qemu = startQemu(scope, {"--vri-hugepage-probe", "9"});
  ASSERT_TRUE(vmStarted(kVmUuid, qemu));
  EXPECT_EQ(trimmed(readFile(root_ + "/" + scope + "/hugetlb.2MB.max")), std::to_string(16ULL << 20));
  EXPECT_EQ(trimmed(readFile(root_ + "/" + scope + "/emulator/cpuset.mems")), mems.format());
  // Nine pages where eight were given: the ninth fault is refused.
  ASSERT_TRUE(testing::waitsForUsr1(qemu));
  ::kill(qemu, SIGUSR1);
  int status = 0;
  ASSERT_EQ(::waitpid(qemu, &status, 0), qemu);
  children_.clear();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status;
}

// A Guaranteed pod's 2 MiB pages, as kubelet's CRI asks for them: on its CPU's node, its memory bound
// there, the pod's and the container's hugetlb limits written (VRI writes everything here), and a
// process in the container that faults one page past them refused by the kernel.
TEST_F(VridV2Test, AGuaranteedPodsPagesAreOnItsCpusNodeAndNoMore) {
  ASSERT_NO_FATAL_FAILURE(startVrid());
  v1::AdmitContainerRequest dpdk;
  dpdk.set_pod_uid(kPodUid);
  dpdk.set_pod_name("nfv/dpdk");
  dpdk.set_qos(v1::GUARANTEED);
  dpdk.set_container_name("app");
  dpdk.set_container_id("dd12ee34");
  dpdk.set_cpu_request_milli(1000);
  dpdk.set_cpu_limit_milli(1000);
  dpdk.set_memory_limit_bytes(64ULL << 20);
  for (const auto& [size, bytes] : {std::pair{2ULL << 20, 16ULL << 20}, std::pair{1ULL << 30, 0ULL}}) {
    v1::HugepageLimit& pages = *dpdk.add_hugepage_limits();
    pages.set_page_size_bytes(size);
    pages.set_limit_bytes(bytes);
  }
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  const grpc::Status admitted = stub_->AdmitContainer(&c1, dpdk, &placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message() << vrid_->log();
  ASSERT_EQ(placed.cpuset_cpus(), "1");
  std::string numa;  // CPU 1's node: sysfs links it as cpu1/node<N>
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/cpu/cpu1")) {
    const std::string name = entry.path().filename();
    if (name.starts_with("node")) numa = name.substr(4);
  }
  ASSERT_FALSE(numa.empty());
  EXPECT_EQ(placed.cpuset_mems(), numa) << "its pages and memory on its CPU's node";
  const std::string pod = "kubepods/pod" + std::string(kPodUid);
  const std::string container = pod + "/dd12ee34";
  for (const std::string& group : {pod, container}) {
    EXPECT_EQ(trimmed(readFile(root_ + "/" + group + "/hugetlb.2MB.max")), std::to_string(16ULL << 20)) << group;
  }
  EXPECT_EQ(trimmed(readFile(root_ + "/" + container + "/cpuset.mems")), numa);
  const int probe = spawn({"--vri-hugepage-probe", "9"});
  ASSERT_NO_FATAL_FAILURE(write(root_ + "/" + container + "/cgroup.procs", std::to_string(probe)));
  ASSERT_TRUE(testing::waitsForUsr1(probe));
  ::kill(probe, SIGUSR1);
  int status = 0;
  ASSERT_EQ(::waitpid(probe, &status, 0), probe);
  children_.clear();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) << "status " << status;
  EXPECT_EQ(trimmed(readFile(root_ + "/" + container + "/hugetlb.2MB.events")).find("max 0"), std::string::npos)
      << "the kernel counted the refused fault";

  // A restart keeps the pages in the books and finds nothing to repair.
  ASSERT_NO_FATAL_FAILURE(stopVrid());
  ASSERT_NO_FATAL_FAILURE(startVrid());
  const v1::ReconcileReply after_restart = reconcile(true);
  EXPECT_TRUE(after_restart.drift().empty()) << after_restart.drift(0);
  grpc::ClientContext c2;
  v1::Node node;
  ASSERT_TRUE(stub_->GetNode(&c2, {}, &node).ok());
  uint64_t pods = 0;
  for (const v1::MemoryBooks& m : node.capacity().memory())
    if (m.page_size() == (2ULL << 20) && std::to_string(m.numa_node()) == numa) pods = m.books().pods();
  EXPECT_EQ(pods, 16ULL << 20);
}

}  // namespace
}  // namespace vri
