// vri-nrt-exporter against the control-plane fixture and a real vrid
// (tests/cluster/topology_export_fixture.h): the object it writes, with only
// deploy/nrt-exporter-rbac.yaml's rights, is what the scheduler's NodeResourceTopologyMatch plugin
// places pods by; it follows decisions, coalesced, through restarts and an API server's outage.
#include "tests/cluster/topology_export_fixture.h"

namespace vri::cluster_test {
namespace {

TEST_F(TopologyExportTest, AVmsDedicatedCpusKeepAPodThatNeedsTheirZoneOffTheNode) {
  // Each zone as vrid would grant it: CPU 0 is reserved.
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  EXPECT_EQ(figure("node-0", "cpu", "capacity"), 4);
  EXPECT_EQ(figure("node-0", "cpu", "allocatable"), 3);

  // A pod of 4 CPUs fits node-1 alone: bound.
  guaranteedPod("four", 4);
  ASSERT_TRUE(testing::eventually([&] { return boundTo("four") == node_; })) << schedulingMessage("four");

  // A dedicated VM of 4 vCPUs takes node-1 whole; the object says so, and the next pod of 4 CPUs
  // fits no zone of the node.
  ASSERT_TRUE(admitVm(kVm, 4).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 0); })) << object().dump(1);
  guaranteedPod("after-vm", 4, /*anyOfGroup=*/true);
  ASSERT_TRUE(testing::eventually([&] { return refusedByPlugin("after-vm"); })) << schedulingMessage("after-vm");
  EXPECT_EQ(boundTo("after-vm"), "");

  // A second node of the group with room: the pod goes there.
  makeRoomyNode(node_ + "-b");
  ASSERT_TRUE(testing::eventually([&] { return boundTo("after-vm") == node_ + "-b"; }, std::chrono::seconds(30)))
      << schedulingMessage("after-vm");

  // vrictl says what the object says, zone by zone.
  std::string capacity;
  ASSERT_EQ(
      testing::runCommand({VRICTL_BINARY, "--socket", vrid_->socket(), "capacity"}, &capacity, tmp_.sub("vrictl.out")),
      0)
      << capacity;
  EXPECT_NE(capacity.find("Exclusive CPUs free:   node 0: " + std::to_string(figure("node-0", "cpu")) +
                          ", node 1: " + std::to_string(figure("node-1", "cpu"))),
            std::string::npos)
      << capacity << object().dump(1);

  // The VM gone, node-1 is free again in the object.
  ASSERT_TRUE(releaseVm(kVm).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1);
  EXPECT_EQ(testing::count(exporterLog(), "created NodeResourceTopology"), 1u) << exporterLog();
}

TEST_F(TopologyExportTest, SharedDemandAloneCanBeTheLimit) {
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  // Burstable containers asking 5 CPUs of the shared pool: of its 8 CPUs, 3 can still go to one
  // exclusive request, in either zone.
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000b001", node_ + "/web", v1::BURSTABLE, 5000).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 3); })) << object().dump(1);
  guaranteedPod("four", 4);
  ASSERT_TRUE(testing::eventually([&] { return refusedByPlugin("four"); })) << schedulingMessage("four");
  guaranteedPod("three", 3);
  ASSERT_TRUE(testing::eventually([&] { return boundTo("three") == node_; })) << schedulingMessage("three");
}

TEST_F(TopologyExportTest, TheFingerprintCoversVridsGuaranteedPodsAsTheSchedulerPluginComputesIt) {
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000c001", "default/half", v1::GUARANTEED, 500).ok());
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000c002", "default/web", v1::BURSTABLE, 250).ok());
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000c003", "batch/two", v1::GUARANTEED, 2000).ok());
  const std::string expected = peersFingerprint({"default/half", "batch/two"});
  ASSERT_TRUE(testing::eventually([&] { return attribute("nodeTopologyPodsFingerprint") == expected; }))
      << attribute("nodeTopologyPodsFingerprint") << " != " << expected;
  EXPECT_EQ(attribute("nodeTopologyPodsFingerprintMethod"), "with-exclusive-resources");
  EXPECT_EQ(attribute("topologyManagerPolicy"), "single-numa-node");
}

TEST_F(TopologyExportTest, RestartsOfTheExporterAndOfVridLeaveTheSameObjectAndDeleteRemovesIt) {
  ASSERT_TRUE(admitVm(kVm, 2).ok());
  ASSERT_TRUE(testing::eventually([&] { return figure("node-0", "cpu") + figure("node-1", "cpu") == 5; }))
      << object().dump(1);
  const json before = object();
  stopExporter();
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  startExporter();
  ASSERT_TRUE(
      testing::eventually([&] { return testing::count(exporterLog(), "exporting NodeResourceTopology") == 2; }));
  ASSERT_TRUE(testing::eventually([&] { return object().is_object(); }));
  EXPECT_EQ(object()["zones"], before["zones"]);
  EXPECT_EQ(object()["attributes"], before["attributes"]);
  EXPECT_EQ(testing::count(exporterLog(), "created NodeResourceTopology"), 1u) << exporterLog();

  // Only its own objects: the exporter's user may not read pods, nor write Nodes.
  std::string out;
  kubectl({"auth", "can-i", "list", "pods", "--as=vri-nrt-exporter"}, &out);
  EXPECT_EQ(out, "no\n");
  kubectl({"auth", "can-i", "patch", "noderesourcetopologies.topology.node.k8s.io", "--all-namespaces",
           "--as=vri-nrt-exporter"},
          &out);
  EXPECT_EQ(out, "yes\n");

  stopExporter();
  const std::vector<std::string> remove{VRI_NRT_EXPORTER_BINARY, "--delete", "--node-name=" + node_,
                                        "--kubeconfig=" + kClusterDir + "/nrt-exporter.kubeconfig"};
  ASSERT_EQ(testing::runCommand(remove, &out, tmp_.sub("delete.out")), 0) << out;
  EXPECT_FALSE(kubectl({"get", "noderesourcetopology", node_}));
  ASSERT_EQ(testing::runCommand(remove, &out, tmp_.sub("delete.out")), 0) << "a second delete: " << out;
}

TEST_F(TopologyExportTest, ABurstOfDecisionsIsCoalescedIntoAtMostFiveWritesASecond) {
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  // Each Guaranteed pod changes the fingerprint: every decision changes the object.
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) {
    char uid[40];
    std::snprintf(uid, sizeof uid, "0b1c2d3e-0000-4000-8000-%012d", 7000 + i);
    names.push_back("default/burst-" + std::to_string(i));
    ASSERT_TRUE(admitContainer(uid, names.back(), v1::GUARANTEED, 50).ok());
  }
  // The last decision reaches the object.
  const std::string expected = peersFingerprint(names);
  ASSERT_TRUE(testing::eventually([&] { return attribute("nodeTopologyPodsFingerprint") == expected; }));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stopExporter();
  const std::string log = exporterLog();
  const size_t at = log.find(" written, ");
  ASSERT_NE(at, std::string::npos) << log;
  const size_t from = log.rfind(", ", at - 1);
  const int writes = std::stoi(log.substr(from + 2, at - from - 2));
  // The first write, then at most one per 200 ms while the burst lasted.
  EXPECT_LE(writes, 2 + static_cast<int>(seconds * 5)) << "in " << seconds << " s: " << log;
  EXPECT_LT(writes, 21) << "20 decisions, each written: nothing coalesced";
  std::printf("%d writes for 20 decisions in %.3f s\n", writes, seconds);
}

TEST_F(TopologyExportTest, WhileTheApiServerIsAwayNoDecisionWaitsAndTheObjectIsRightAfterItsReturn) {
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  ASSERT_TRUE(fixture({"apiserver", "stop"}));
  // 30 s of decisions: a dedicated VM admitted and released, again and again.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::chrono::steady_clock::duration slowest{};
  int decisions = 0;
  while (std::chrono::steady_clock::now() < until) {
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(admitVm(kVm, 4).ok());
    ASSERT_TRUE(releaseVm(kVm).ok());
    slowest = std::max(slowest, (std::chrono::steady_clock::now() - start) / 2);
    decisions += 2;
  }
  ASSERT_TRUE(admitVm(kVm, 4).ok());  // what the object must say once the API server is back
  const double slowestMs = std::chrono::duration<double, std::milli>(slowest).count();
  std::printf("%d decisions in 30 s without the API server; the slowest took %.3f ms\n", decisions, slowestMs);
  EXPECT_LT(slowestMs, 1000.0) << "a decision waited for the API server";
  ASSERT_TRUE(fixture({"apiserver", "start"}));
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 0); })) << object().dump(1) << exporterLog();
  EXPECT_NE(exporterLog().find("trying again in"), std::string::npos) << exporterLog();
}

// Under `restricted` (and `best-effort`) the plugin does not filter: a pod that fits no zone of what
// VRI would grant is bound all the same, and VRI refuses it at CreateContainer. docs/operating.md's warning.
class TopologyExportRestrictedTest : public TopologyExportTest {
 protected:
  std::string policy() const override { return "restricted"; }
};

TEST_F(TopologyExportRestrictedTest, APodThatFitsNoZoneIsBoundAllTheSame) {
  ASSERT_TRUE(admitVm(kVm, 4).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 0); })) << object().dump(1) << exporterLog();
  EXPECT_EQ(attribute("topologyManagerPolicy"), "restricted");
  guaranteedPod("four", 4);
  ASSERT_TRUE(testing::eventually([&] { return boundTo("four") == node_; })) << schedulingMessage("four");
  // What vrid says of the same request: no zone, nor the node, has 4 CPUs for it.
  EXPECT_FALSE(admitContainer("0b1c2d3e-0000-4000-8000-00000000e001", node_ + "/four", v1::GUARANTEED, 4000).ok());
}

// The scheduler's reserve cache (overreserve), with VRI's object there before the scheduler starts: a
// pod bound to the node counts against every zone until the object accounts for it, which the cache
// knows by the pods fingerprint: the plugin's, over the node's running Guaranteed pods, equal to
// VRI's, over the Guaranteed pods in its ledger. Without kubelet the test plays its part: it marks

TEST_F(TopologyExportTest, RefusesANodeNameKubernetesWouldNot) {
  std::string out;
  EXPECT_EQ(testing::runCommand({VRI_NRT_EXPORTER_BINARY, "--node-name=../etc",
                                 "--kubeconfig=" + kClusterDir + "/nrt-exporter.kubeconfig"},
                                &out, tmp_.sub("bad.out")),
            2);
  EXPECT_NE(out.find("is not a DNS subdomain"), std::string::npos) << out;
}

}  // namespace
}  // namespace vri::cluster_test
