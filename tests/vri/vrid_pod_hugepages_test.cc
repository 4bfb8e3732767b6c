// Pods' hugepages through a whole vrid on the cgroup v1 fixture: a container's CRI hugepage limits
// come out of the same per-NUMA books as a VM's pages and bind its memory to its CPUs' node; where
// VRI writes everything it writes the pod's and the container's hugetlb limits as kubelet and runc
// would; by default it only verifies them (drift names a wrong one, reconcile leaves it to its
// owner); a restart keeps them; capacity shows them beside the VMs'.
#include <gmock/gmock.h>

#include "tests/support/eventually.h"
#include "tests/vri/vrid_api_fixture.h"
#include "vri/metrics_text.h"

namespace vri {
namespace {

using testing::container;
using ::testing::Contains;
using testing::DaemonHarness;
using ::testing::HasSubstr;
using testing::kUid;
using testing::kVmUuid;
using ::testing::Not;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t k2M = 2 * kMiB;
constexpr char kId[] = "beef01";

// CPUs 0-3 on node 0 and 4-7 on node 1, each node with 128 MiB of 2 MiB pages; node 1 with one 1 GiB page.
std::shared_ptr<const Topology> twoNodesWithPages() {
  TopologyDescription d;
  d.numaNodes = {{0, 0, 8 * kGiB, {{k2M, 64}}}, {1, 0, 8 * kGiB, {{k2M, 64}, {kGiB, 1}}}};
  for (int cpu = 0; cpu < 8; ++cpu) d.cpus.push_back({cpu, cpu / 2, 0, cpu / 4, -1});
  d.source = "two nodes with hugepages";
  return std::make_shared<const Topology>(std::move(Topology::create(d)).value());
}

// A Guaranteed container as kubelet sends it: a limit for every size the node has, 0 where none is asked for.
v1::AdmitContainerRequest withPages(uint64_t bytes2M) {
  v1::AdmitContainerRequest r = container(kUid, v1::GUARANTEED, 2000, 2000, kId);
  for (const auto& [size, bytes] : {std::pair{k2M, bytes2M}, std::pair{kGiB, uint64_t{0}}}) {
    v1::HugepageLimit& limit = *r.add_hugepage_limits();
    limit.set_page_size_bytes(size);
    limit.set_limit_bytes(bytes);
  }
  return r;
}

v1::AdmitVmRequest vmWithPages(const std::string& uuid, const std::string& name, uint64_t bytes) {
  v1::AdmitVmRequest r = testing::vm(uuid, name, 1, v1::SHARED);
  r.set_memory_bytes(bytes);
  r.set_hugepage_size(k2M);
  return r;
}

class VridPodHugepagesTest : public ::testing::Test {
 protected:
  explicit VridPodHugepagesTest(Ownership ownership = Ownership::kEverything) {
    vrid_.topology = twoNodesWithPages();
    vrid_.config.layout.ownership = ownership;
  }
  void SetUp() override { ASSERT_TRUE(vrid_.start()); }

  v1::Node node() {
    grpc::ClientContext context;
    v1::Node reply;
    EXPECT_TRUE(vrid_.readOnly->GetNode(&context, {}, &reply).ok());
    return reply;
  }
  // The 2 MiB pages' books of one NUMA node, as GetNode (and vrictl capacity) show them.
  v1::ResourceBooks pages2M(int numa) {
    const v1::Node now = node();
    for (const v1::MemoryBooks& m : now.capacity().memory()) {
      if (m.numa_node() == numa && m.page_size() == k2M) return m.books();
    }
    ADD_FAILURE() << "no 2 MiB books for node " << numa;
    return {};
  }
  grpc::Status admit(const v1::AdmitContainerRequest& r, v1::ContainerAllocation& placed) {
    grpc::ClientContext context;
    return vrid_.admin->AdmitContainer(&context, r, &placed);
  }
  grpc::Status admitVm(const v1::AdmitVmRequest& r) {
    grpc::ClientContext context;
    v1::VmAllocation placed;
    return vrid_.admin->AdmitVm(&context, r, &placed);
  }
  std::string hugetlb(const std::string& path, const std::string& size) {
    auto value = vrid_.fs().read({"hugetlb", *CgroupPath::parse(path)}, "hugetlb." + size + ".limit_in_bytes");
    return value.ok() ? *value : "<" + value.error().message() + ">";
  }
  v1::ReconcileReply reconcile(bool dryRun) {
    grpc::ClientContext context;
    v1::ReconcileRequest request;
    request.set_dry_run(dryRun);
    v1::ReconcileReply reply;
    EXPECT_TRUE(vrid_.admin->Reconcile(&context, request, &reply).ok());
    return reply;
  }

  const std::string podPath_ = std::string("kubepods/pod") + kUid;
  const std::string containerPath_ = podPath_ + "/" + kId;
  DaemonHarness vrid_;
};

TEST_F(VridPodHugepagesTest, PagesComeFromTheBooksOfTheCpusNodeAndTheKernelHoldsTheLimits) {
  v1::ContainerAllocation placed;
  ASSERT_TRUE(admit(withPages(96 * kMiB), placed).ok());
  const CpuSet cpus = *CpuSet::parse(placed.cpuset_cpus());
  ASSERT_EQ(cpus.count(), 2);
  const int numa = cpus.first() / 4;
  EXPECT_EQ(placed.cpuset_mems(), std::to_string(numa)) << "the pages and the CPUs on one node";
  EXPECT_EQ(pages2M(numa).pods(), 96 * kMiB);
  EXPECT_EQ(pages2M(numa).vms(), 0u);
  EXPECT_EQ(pages2M(1 - numa).pods(), 0u);
  // As runc writes the container's limits and kubelet the pod's: 0 for a size not asked for.
  EXPECT_EQ(hugetlb(containerPath_, "2MB"), std::to_string(96 * kMiB));
  EXPECT_EQ(hugetlb(containerPath_, "1GB"), "0");
  EXPECT_EQ(hugetlb(podPath_, "2MB"), std::to_string(96 * kMiB));
  EXPECT_EQ(hugetlb(podPath_, "1GB"), "0");
  const std::string metrics =
      renderMetrics(vrid_.daemon().node(), vrid_.daemon().usage(), vrid_.daemon().callMetrics());
  EXPECT_THAT(metrics, HasSubstr("vri_numa_hugepages_allocated_bytes{numa_node=\"" + std::to_string(numa) +
                                 "\",page_size=\"2097152\",kind=\"pod\"} " + std::to_string(96 * kMiB)));
  EXPECT_THAT(metrics, HasSubstr("vri_numa_hugepages_capacity_bytes{numa_node=\"1\",page_size=\"1073741824\"} " +
                                 std::to_string(kGiB)));
  v1::ContainerAllocation again;
  ASSERT_TRUE(admit(withPages(96 * kMiB), again).ok()) << "idempotent";
  EXPECT_EQ(pages2M(numa).pods(), 96 * kMiB);

  // A VM draws from the same books: 96 MiB fits on the other node only, the next 72 MiB nowhere.
  ASSERT_TRUE(admitVm(vmWithPages(kVmUuid, "first", 96 * kMiB)).ok());
  EXPECT_EQ(pages2M(1 - numa).vms(), 96 * kMiB);
  const v1::Node before = node();
  const grpc::Status refused = admitVm(vmWithPages("7d7e0a2e-0000-4000-8000-000000000002", "second", 72 * kMiB));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("72 MiB of hugepages-2Mi"));
  EXPECT_THAT(refused.error_message(), HasSubstr("VMs hold 96 MiB and pods 96 MiB of the 256 MiB there"));
  // (The books and the pools: the node's maps serialise in no set order.)
  EXPECT_EQ(node().capacity().SerializeAsString(), before.capacity().SerializeAsString())
      << "a refusal changes nothing";
  EXPECT_EQ(node().shared_cpus(), before.shared_cpus());

  // Released, the pod's pages are free again, and the VM fits.
  grpc::ClientContext context;
  v1::ReleasePodRequest release;
  release.set_pod_uid(kUid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleasePod(&context, release, &released).ok());
  EXPECT_EQ(pages2M(numa).pods(), 0u);
  EXPECT_TRUE(admitVm(vmWithPages("7d7e0a2e-0000-4000-8000-000000000002", "second", 64 * kMiB)).ok());
}

TEST_F(VridPodHugepagesTest, APodThatVmsLeaveTooFewPagesIsRefusedWithWhatIsShort) {
  ASSERT_TRUE(admitVm(vmWithPages(kVmUuid, "a", 100 * kMiB)).ok());
  ASSERT_TRUE(admitVm(vmWithPages("7d7e0a2e-0000-4000-8000-000000000002", "b", 100 * kMiB)).ok());
  v1::ContainerAllocation placed;
  const grpc::Status refused = admit(withPages(64 * kMiB), placed);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("needs 64 MiB of hugepages-2Mi"));
  EXPECT_THAT(refused.error_message(), HasSubstr("VMs hold 200 MiB and pods 0 MiB of the 256 MiB there"));
  EXPECT_EQ(node().pods(), 0);
  EXPECT_FALSE(vrid_.fs().exists({"cpuset", *CgroupPath::parse(podPath_)})) << "no cgroup for a refused pod";
  // Limit 0 is none at all, not unlimited: such a container is admitted and holds no page.
  ASSERT_TRUE(admit(withPages(0), placed).ok());
  EXPECT_EQ(pages2M(0).pods() + pages2M(1).pods(), 0u);
  EXPECT_EQ(hugetlb(containerPath_, "2MB"), "0");
}

TEST_F(VridPodHugepagesTest, ARestartKeepsThePodsPages) {
  v1::ContainerAllocation placed;
  ASSERT_TRUE(admit(withPages(32 * kMiB), placed).ok());
  const int numa = std::stoi(placed.cpuset_mems());
  ASSERT_TRUE(vrid_.restart());
  EXPECT_EQ(pages2M(numa).pods(), 32 * kMiB);
  grpc::ClientContext context;
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&context, get, &tenant).ok());
  ASSERT_EQ(tenant.pod().containers_size(), 1);
  EXPECT_EQ(tenant.pod().containers(0).cpuset_mems(), std::to_string(numa));
  EXPECT_EQ(tenant.pod().containers(0).resources().hugepage_limits_size(), 2);
  EXPECT_THAT(reconcile(true).drift(), Not(Contains(HasSubstr(kUid))));
}

// By default kubelet and runc write the hugetlb limits: VRI verifies them and never writes them.
class VridPodHugepagesVerifiedTest : public VridPodHugepagesTest {
 protected:
  VridPodHugepagesVerifiedTest() : VridPodHugepagesTest(Ownership::kCpusetsAndMachine) {}
  // kubelet's pod cgroup and runc's container cgroup, in every hierarchy.
  void kubeletMakesTheCgroups() {
    for (const std::string& path : {std::string("kubepods"), podPath_, containerPath_}) {
      for (const char* h : {"cpuset", "cpu,cpuacct", "memory", "hugetlb", "pids"}) {
        const CgroupPath at = *CgroupPath::parse(path);
        if (vrid_.fs().exists({h, at})) continue;
        ASSERT_TRUE(vrid_.fs().mkdir({h, at}).ok()) << h << ":" << path;
        if (std::string(h) != "cpuset") continue;
        // As a new cpuset gets its parent's (kubelet and runc see to it).
        for (const char* file : {"cpuset.mems", "cpuset.cpus"}) {
          ASSERT_TRUE(vrid_.fs().write({h, at}, file, *vrid_.fs().read({h, at.parent()}, file)).ok());
        }
      }
    }
  }
  void write(const std::string& path, const std::string& file, const std::string& value) {
    ASSERT_TRUE(vrid_.fs().write({"hugetlb", *CgroupPath::parse(path)}, file, value).ok());
  }
};

TEST_F(VridPodHugepagesVerifiedTest, DriftNamesAWrongLimitAndReconcileLeavesItToItsOwner) {
  kubeletMakesTheCgroups();
  v1::ContainerAllocation placed;
  const grpc::Status admitted = admit(withPages(32 * kMiB), placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message();
  const std::string unlimited = hugetlb(containerPath_, "2MB");
  EXPECT_NE(unlimited, std::to_string(32 * kMiB)) << "VRI wrote a limit kubelet and runc own";

  // As kubelet and runc write them: nothing differs.
  for (const std::string& path : {podPath_, containerPath_}) {
    write(path, "hugetlb.2MB.limit_in_bytes", std::to_string(32 * kMiB));
    write(path, "hugetlb.1GB.limit_in_bytes", "0");
  }
  EXPECT_THAT(reconcile(true).drift(), Not(Contains(HasSubstr(kUid))));

  // Someone raises the container's limit past what the ledger gave it: drift says so, reconcile does not write it.
  write(containerPath_, "hugetlb.2MB.limit_in_bytes", std::to_string(64 * kMiB));
  const v1::ReconcileReply dry = reconcile(true);
  EXPECT_THAT(dry.drift(), Contains(AllOf(HasSubstr(kId), HasSubstr("hugetlb.2MB.limit_in_bytes"),
                                          HasSubstr(std::to_string(32 * kMiB)), HasSubstr("VRI does not"))));
  const v1::ReconcileReply repaired = reconcile(false);
  EXPECT_THAT(repaired.operations(), Not(Contains(HasSubstr("hugetlb"))));
  EXPECT_EQ(hugetlb(containerPath_, "2MB"), std::to_string(64 * kMiB));
  EXPECT_THAT(vrid_.logText(), HasSubstr("hugetlb.2MB.limit_in_bytes"));
  // Logged once, not at every reconcile.
  const size_t logged = vrid_.logText().size();
  reconcile(false);
  EXPECT_EQ(vrid_.logText().size(), logged);
}

}  // namespace
}  // namespace vri
