// The scheduler's side of VRI's object in its other modes (tests/cluster/topology_export_fixture.h):
// the reserve cache and VRI's fingerprint, best-effort pods under LeastNUMANodes, and hugepages a VM
// holds.
#include "tests/cluster/topology_export_fixture.h"

namespace vri::cluster_test {
namespace {

// the bound pod Running and admits it in vrid.
class TopologyExportOverReserveTest : public TopologyExportTest {
 protected:
  void SetUp() override {
    TopologyExportTest::SetUp();
    ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
    ASSERT_TRUE(fixture({"scheduler", "overreserve"}));  // it lists the objects as they are now
  }
  void TearDown() override {
    TopologyExportTest::TearDown();
    fixture({"scheduler", "passthrough"});
  }
  // A change of the object, which sends pods the plugin refused back to be scheduled: a dedicated VM
  // of one vCPU admitted or released in turn.
  void touchObject() {
    if (vmHeld_) {
      EXPECT_TRUE(releaseVm(kVm).ok());
    } else {
      EXPECT_TRUE(admitVm(kVm, 1).ok());
    }
    vmHeld_ = !vmHeld_;
  }
  // Whether `pod` is bound to this test's node within `limit`, the object changed every 2 s meanwhile
  // (each change sends the refused pod back to the scheduler; the cache resyncs every 5 s).
  bool boundWhileTouching(const std::string& pod, std::chrono::seconds limit) {
    auto touched = std::chrono::steady_clock::now();
    return testing::eventually(
        [&] {
          if (std::chrono::steady_clock::now() - touched > std::chrono::seconds(2)) {
            touchObject();
            touched = std::chrono::steady_clock::now();
          }
          return boundTo(pod) == node_;
        },
        limit);
  }
  bool vmHeld_ = false;
};

TEST_F(TopologyExportOverReserveTest, ABoundPodCountsUntilVrisFingerprintSaysTheObjectHasIt) {
  guaranteedPod("two", 2);
  ASSERT_TRUE(testing::eventually([&] { return boundTo("two") == node_; })) << schedulingMessage("two");
  std::string out;
  ASSERT_TRUE(kubectl({"-n", node_, "patch", "pod", "two", "--subresource=status", "--type=merge", "-p",
                       R"({"status": {"phase": "Running"}})"},
                      &out))
      << out;
  // Reserved against both zones: 1 and 2 CPUs left in the cache's view, though the object says 3 and 4.
  guaranteedPod("three", 3);
  ASSERT_TRUE(testing::eventually([&] { return refusedByPlugin("three"); })) << schedulingMessage("three");

  // VRI has not admitted the pod: its fingerprint is not the plugin's, and past the cache's resync
  // (5 s) and the object's changes the pod stays where it is.
  EXPECT_FALSE(boundWhileTouching("three", std::chrono::seconds(8)))
      << "the cache took an object that does not account for the bound pod";

  // kubelet would have created it: vrid admits it, the fingerprints agree, and at the next resync the
  // cache takes the object, in which one zone still has 3 CPUs.
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000f002", node_ + "/two", v1::GUARANTEED, 2000).ok());
  ASSERT_TRUE(testing::eventually(
      [&] { return attribute("nodeTopologyPodsFingerprint") == peersFingerprint({node_ + "/two"}); }));
  ASSERT_TRUE(boundWhileTouching("three", std::chrono::seconds(40))) << schedulingMessage("three");
}

// Under `best-effort` the plugin filters nothing, and scores only with the LeastNUMANodes strategy:
// it prefers the node where a pod needs the fewest NUMA zones of what VRI would grant. The scheduler
// runs with that strategy for these tests alone.
class TopologyExportBestEffortTest : public TopologyExportTest {
 protected:
  std::string policy() const override { return "best-effort"; }
  void SetUp() override {
    ASSERT_TRUE(fixture({"scheduler", "passthrough", "LeastNUMANodes"}));
    TopologyExportTest::SetUp();
  }
  void TearDown() override {
    TopologyExportTest::TearDown();
    fixture({"scheduler", "passthrough"});
  }
  // Pods made, bound and deleted one at a time (so that no pod of the test counts on a node in
  // another plugin's score): the nodes each went to.
  std::vector<std::string> placeOneByOne(const std::string& name, int cpus, int times) {
    std::vector<std::string> nodes;
    for (int i = 0; i < times; ++i) {
      const std::string pod = name + "-" + std::to_string(i);
      guaranteedPod(pod, cpus, /*anyOfGroup=*/true);
      EXPECT_TRUE(testing::eventually([&] { return !boundTo(pod).empty(); })) << schedulingMessage(pod);
      nodes.push_back(boundTo(pod));
      kubectl({"-n", node_, "delete", "pod", pod, "--grace-period=0", "--force"});
    }
    return nodes;
  }
};

TEST_F(TopologyExportBestEffortTest, PodsGoWhereTheyNeedTheFewestZonesOfWhatVriWouldGrant) {
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  EXPECT_EQ(attribute("topologyManagerPolicy"), "best-effort");
  // A second node whose 4 free CPUs lie in two zones of 2.
  makeNode(node_ + "-b",
           "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\n"
           "metadata: {name: " +
               node_ +
               "-b}\nattributes:\n"
               "- {name: topologyManagerPolicy, value: best-effort}\nzones:\n"
               "- name: node-0\n  type: Node\n  resources:\n"
               "  - {name: cpu, capacity: \"4\", allocatable: \"4\", available: \"2\"}\n"
               "  - {name: memory, capacity: 8Gi, allocatable: 8Gi, available: 8Gi}\n"
               "- name: node-1\n  type: Node\n  resources:\n"
               "  - {name: cpu, capacity: \"4\", allocatable: \"4\", available: \"2\"}\n"
               "  - {name: memory, capacity: 8Gi, allocatable: 8Gi, available: 8Gi}\n");
  // 3 CPUs: one zone of VRI's node, two of the other. Three times, so that a tie (no scoring) would
  // have sent at least one elsewhere in 7 runs of 8.
  const std::vector<std::string> vris(3, node_);
  EXPECT_EQ(placeOneByOne("three", 3, 3), vris);

  // A dedicated VM takes node-1 whole: 3 CPUs are left, in node-0; a pod of 4 fits no combination of
  // VRI's zones and two of the other node's.
  ASSERT_TRUE(admitVm(kVm, 4).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 0); })) << object().dump(1);
  const std::vector<std::string> others(3, node_ + "-b");
  EXPECT_EQ(placeOneByOne("four", 4, 3), others);
}

// The node's 1 GiB pages (tests/data/two-packages-cpuless-node.xml: two, in node 0) held by a VM
// keep a pod that needs one off the node: no pod-based exporter sees a VM's hugepages.
class TopologyExportHugepagesTest : public TopologyExportTest {
 protected:
  std::vector<std::string> vridFlags() const override {
    return {"--topology=xml:" + std::string(VRI_SOURCE_DIR) + "/tests/data/two-packages-cpuless-node.xml"};
  }
  std::string nodeHugepages1Gi() const override { return "2Gi"; }
};

TEST_F(TopologyExportHugepagesTest, AVmsOneGibPagesKeepAPodThatNeedsThemOffTheNode) {
  constexpr long long kGib = 1LL << 30;
  ASSERT_TRUE(testing::eventually([&] { return figure("node-0", "hugepages-1Gi") == 2 * kGib; }))
      << object().dump(1) << exporterLog();
  EXPECT_EQ(figure("node-0", "hugepages-1Gi", "capacity"), 2 * kGib);
  EXPECT_EQ(figure("node-1", "hugepages-1Gi"), -1) << "node 1 has no 1 GiB pages";
  EXPECT_EQ(figure("node-1", "hugepages-2Mi", "capacity"), 256 * (2LL << 20));
  const long long cpusBefore = figure("node-0", "cpu");

  guaranteedPod("pages", 1, false, "1Gi");
  ASSERT_TRUE(testing::eventually([&] { return boundTo("pages") == node_; })) << schedulingMessage("pages");

  // A shared VM whose 2 GiB of memory are node 0's 1 GiB pages.
  v1::AdmitVmRequest request;
  request.set_uuid(kVm);
  request.set_name("pages");
  request.set_vcpus(1);
  request.set_cpu_policy(v1::SHARED);
  request.set_memory_bytes(2 * kGib);
  request.set_hugepage_size(kGib);
  request.add_strict_numa_nodes(0);
  grpc::ClientContext context;
  v1::VmAllocation placed;
  const grpc::Status admitted = admin_->AdmitVm(&context, request, &placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message();
  ASSERT_TRUE(testing::eventually([&] { return figure("node-0", "hugepages-1Gi") == 0; })) << object().dump(1);
  EXPECT_EQ(figure("node-0", "cpu"), cpusBefore) << "a shared VM holds no CPU of its own";

  guaranteedPod("pages-after", 1, false, "1Gi");
  ASSERT_TRUE(testing::eventually([&] { return refusedByPlugin("pages-after"); })) << schedulingMessage("pages-after");
  EXPECT_EQ(boundTo("pages-after"), "");
  // A pod's 2 MiB pages, admitted as kubelet's CRI asks (a limit per size, 0 for those not asked
  // for), come off the same zones' figures as a VM's.
  const auto free2Mi = [&] { return figure("node-0", "hugepages-2Mi") + figure("node-1", "hugepages-2Mi"); };
  const long long before2Mi = free2Mi();
  v1::AdmitContainerRequest dpdk;
  dpdk.set_pod_uid("5e6f7a8b-0000-4000-8000-000000000001");
  dpdk.set_pod_name("default/dpdk");
  dpdk.set_qos(v1::GUARANTEED);
  dpdk.set_container_name("app");
  dpdk.set_cpu_request_milli(1000);
  dpdk.set_cpu_limit_milli(1000);
  dpdk.set_memory_limit_bytes(64LL << 20);
  for (const auto& [size, bytes] : {std::pair{2LL << 20, 64LL << 20}, std::pair{kGib, 0LL}}) {
    v1::HugepageLimit& pages = *dpdk.add_hugepage_limits();
    pages.set_page_size_bytes(size);
    pages.set_limit_bytes(bytes);
  }
  grpc::ClientContext pod_context;
  v1::ContainerAllocation pod_placed;
  const grpc::Status pod_admitted = admin_->AdmitContainer(&pod_context, dpdk, &pod_placed);
  ASSERT_TRUE(pod_admitted.ok()) << pod_admitted.error_message();
  ASSERT_TRUE(testing::eventually([&] { return free2Mi() == before2Mi - (64LL << 20); })) << object().dump(1);
}

}  // namespace
}  // namespace vri::cluster_test
