// vri-nrt-exporter against the control-plane fixture (tests/cluster/cluster-fixture.sh, label
// cluster) and a real vrid (two NUMA nodes of 4 CPUs, CPU 0 reserved, single-numa-node): the object
// it writes, with only deploy/nrt-exporter-rbac.yaml's rights, is what the scheduler's
// NodeResourceTopologyMatch plugin places pods by. No kubelet: Node objects are made by hand, the
// scheduler binds pods through the API, and what holds the node's CPUs are VMs and shared demand
// admitted through vrid's API, which no pod-based exporter sees.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "proto/vri.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/support/text_count.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using nlohmann::json;

const std::string kClusterDir = "/run/vri-test-cluster";

std::string peersDir() {
  const char* dir = std::getenv("VRI_PEERS_DIR");
  return dir != nullptr ? dir : "";
}

class TopologyExportTest : public ::testing::Test {
 protected:
  // vrid's topology manager policy, which the object names and the plugin acts on.
  virtual std::string policy() const { return "single-numa-node"; }
  // vrid's flags besides the test defaults (tests/vri/vrid_process.h).
  virtual std::vector<std::string> vridFlags() const { return {}; }
  // The Node object's hugepages-1Gi, as kubelet would report them.
  virtual std::string nodeHugepages1Gi() const { return "0"; }
  void SetUp() override {
    ASSERT_EQ(::access((kClusterDir + "/nrt-exporter.kubeconfig").c_str(), R_OK), 0)
        << "no control plane at " << kClusterDir << ": start it with tests/cluster/cluster-fixture.sh up";
    ASSERT_EQ(::access(kubectlPath().c_str(), X_OK), 0) << "no " << kubectlPath() << ": scripts/build-peers.sh";
    // A node and namespace of each test's own: a namespace takes a while to go.
    node_ = "vri-nrt-" + std::to_string(::getpid()) + "-" +
            std::to_string(::testing::UnitTest::GetInstance()->current_test_info()->line());
    std::ofstream(tmp_.sub("vrid.conf")) << "topology_manager_policy = " << policy() << "\n";
    vrid_ = std::make_unique<testing::VridProcess>(tmp_, "vrid", vridFlags());
    ASSERT_TRUE(vrid_->start());
    admin_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
    ASSERT_TRUE(kubectl({"create", "namespace", node_}));
    // A pod is refused until the controller manager made the namespace's default service account.
    ASSERT_TRUE(testing::eventually(
        [&] {
          return kubectl({"-n", node_, "get", "serviceaccount", "default"});
        },
        std::chrono::seconds(30)));
    makeNode(node_, "");
    startExporter();
  }
  void TearDown() override {
    if (apiServerStopped_) fixture({"apiserver", "start"});
    stopExporter();
    kubectl({"delete", "namespace", node_, "--wait=false"});
    for (const std::string& name : {node_, node_ + "-b"}) {
      kubectl({"delete", "noderesourcetopology", name, "--ignore-not-found"});
      kubectl({"delete", "node", name, "--ignore-not-found"});
    }
  }

  static std::string kubectlPath() { return peersDir() + "/kubernetes/kubectl"; }
  bool kubectl(std::vector<std::string> args, std::string* out = nullptr) {
    args.insert(args.begin(), {kubectlPath(), "--kubeconfig", kClusterDir + "/admin.kubeconfig"});
    std::string text;
    const int code = testing::runCommand(args, &text, tmp_.sub("kubectl.out"));
    if (out != nullptr) *out = text;
    return code == 0;
  }
  bool apply(const std::string& yaml) {
    std::ofstream(tmp_.sub("object.yaml")) << yaml;
    std::string out;
    const bool ok = kubectl({"apply", "-f", tmp_.sub("object.yaml")}, &out);
    EXPECT_TRUE(ok) << out;
    return ok;
  }

  // A Node with 8 CPUs by hand, ready and schedulable, in this test's group (label vri-test-group).
  void makeNode(const std::string& name, const std::string& topology) {
    ASSERT_TRUE(apply("apiVersion: v1\nkind: Node\nmetadata: {name: " + name +
                      ", labels: {kubernetes.io/hostname: " + name + ", vri-test-group: " + node_ + "}}\n"));
    const std::string status =
        R"({"status": {"capacity": {"cpu": "8", "memory": "16Gi", "pods": "110", "hugepages-1Gi": ")" +
        nodeHugepages1Gi() + R"("}, "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110", "hugepages-1Gi": ")" +
        nodeHugepages1Gi() + R"("}, "conditions": [{"type": "Ready", "status": "True", "reason": "ByHand"}]}})";
    std::string out;
    ASSERT_TRUE(kubectl({"patch", "node", name, "--subresource=status", "--type=merge", "-p", status}, &out)) << out;
    // The API server taints a new Node not-ready; only the node lifecycle controller (not run) lifts it.
    ASSERT_TRUE(kubectl({"taint", "node", name, "node.kubernetes.io/not-ready:NoSchedule-"}, &out)) << out;
    if (!topology.empty()) {
      ASSERT_TRUE(apply(topology));
    }
  }

  void startExporter() {
    exporterPid_ = testing::spawn(
        {VRI_NRT_EXPORTER_BINARY, "--node-name=" + node_, "--kubeconfig=" + kClusterDir + "/nrt-exporter.kubeconfig",
         "--vrid=" + vrid_->socket(), "--retry-ms=200"},
        tmp_.sub("exporter.log"), O_APPEND, true);
  }
  void stopExporter() {
    if (exporterPid_ <= 0) return;
    ::kill(exporterPid_, SIGTERM);
    ::waitpid(exporterPid_, nullptr, 0);
    exporterPid_ = -1;
  }
  std::string exporterLog() const { return testing::readFile(tmp_.sub("exporter.log")); }

  json object() {
    std::string out;
    if (!kubectl({"get", "noderesourcetopology", node_, "-o", "json"}, &out)) return nullptr;
    return json::parse(out, nullptr, false);
  }
  // A zone's figure for a resource ("available" by default), or -1 when the object has none.
  long long figure(const std::string& zone, const std::string& resource, const std::string& which = "available") {
    const json o = object();
    if (!o.is_object() || !o.contains("zones")) return -1;
    for (const json& z : o["zones"]) {
      if (z["name"] != zone) continue;
      for (const json& r : z["resources"])
        if (r["name"] == resource) return std::stoll(r[which].get<std::string>());
    }
    return -1;
  }
  bool availableCpus(long long zone0, long long zone1) {
    return figure("node-0", "cpu") == zone0 && figure("node-1", "cpu") == zone1;
  }

  // A Guaranteed pod of `cpus` CPUs for this test's node (or any node of its group).
  void guaranteedPod(const std::string& name, int cpus, bool anyOfGroup = false, const std::string& hugepages1Gi = "") {
    const std::string selector = anyOfGroup ? "vri-test-group: " + node_ : "kubernetes.io/hostname: " + node_;
    const std::string pages = hugepages1Gi.empty() ? "" : ", hugepages-1Gi: " + hugepages1Gi;
    ASSERT_TRUE(apply("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + node_ +
                      "}\nspec:\n  nodeSelector: {" + selector +
                      "}\n  containers:\n  - name: c\n    image: localhost/vri/pause:1.0\n    resources:\n"
                      "      limits: {cpu: \"" +
                      std::to_string(cpus) + "\", memory: 100Mi" + pages + "}\n"));
  }
  std::string boundTo(const std::string& pod) {
    std::string out;
    kubectl({"-n", node_, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"}, &out);
    return out;
  }
  std::string schedulingMessage(const std::string& pod) {
    std::string out;
    kubectl(
        {"-n", node_, "get", "pod", pod, "-o", R"(jsonpath={.status.conditions[?(@.type=="PodScheduled")].message})"},
        &out);
    return out;
  }
  bool refusedByPlugin(const std::string& pod) {
    return schedulingMessage(pod).find("cannot align container") != std::string::npos;
  }

  grpc::Status admitVm(const std::string& uuid, int vcpus) {
    v1::AdmitVmRequest request;
    request.set_uuid(uuid);
    request.set_name("vm-" + uuid.substr(uuid.size() - 2));
    request.set_vcpus(vcpus);
    request.set_cpu_policy(v1::DEDICATED);
    request.set_memory_bytes(512ULL << 20);
    grpc::ClientContext context;
    v1::VmAllocation placed;
    return admin_->AdmitVm(&context, request, &placed);
  }
  grpc::Status releaseVm(const std::string& uuid) {
    v1::ReleaseVmRequest request;
    request.set_uuid(uuid);
    grpc::ClientContext context;
    v1::Released released;
    return admin_->ReleaseVm(&context, request, &released);
  }

  grpc::Status admitContainer(const std::string& uid, const std::string& podName, v1::Qos qos, int64_t milli) {
    v1::AdmitContainerRequest request;
    request.set_pod_uid(uid);
    request.set_pod_name(podName);
    request.set_qos(qos);
    request.set_container_name("app");
    request.set_container_id("c-" + uid.substr(uid.size() - 4));
    request.set_cpu_request_milli(milli);
    request.set_cpu_limit_milli(qos == v1::GUARANTEED ? milli : 0);
    request.set_memory_limit_bytes(qos == v1::GUARANTEED ? 256ULL << 20 : 0);
    grpc::ClientContext context;
    v1::ContainerAllocation allocation;
    return admin_->AdmitContainer(&context, request, &allocation);
  }
  std::string attribute(const std::string& name) {
    const json o = object();
    if (!o.is_object()) return "";
    for (const json& a : o["attributes"])
      if (a["name"] == name) return a["value"];
    return "";
  }
  std::string peersFingerprint(const std::vector<std::string>& pods) {
    std::vector<std::string> argv{peersDir() + "/podfingerprint/podfingerprint"};
    argv.insert(argv.end(), pods.begin(), pods.end());
    std::string out;
    EXPECT_EQ(testing::runCommand(argv, &out, tmp_.sub("pfp.out")), 0) << out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  bool fixture(const std::vector<std::string>& args) {
    std::vector<std::string> argv{std::string(VRI_SOURCE_DIR) + "/tests/cluster/cluster-fixture.sh"};
    argv.insert(argv.end(), args.begin(), args.end());
    ::setenv("VRI_PEERS", (peersDir() + "/kubernetes").c_str(), 1);
    std::string out;
    const bool ok = testing::runCommand(argv, &out, tmp_.sub("fixture.out")) == 0;
    EXPECT_TRUE(ok) << out;
    if (ok && args.size() == 2 && args[0] == "apiserver") apiServerStopped_ = args[1] == "stop";
    return ok;
  }

  testing::TempDir tmp_;
  bool apiServerStopped_ = false;
  std::string node_;
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> admin_;
  pid_t exporterPid_ = -1;
};

constexpr char kVm[] = "7d7e0a2e-0000-4000-8000-0000000000a1";

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
  makeNode(node_ + "-b",
           "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\n"
           "metadata: {name: " +
               node_ +
               "-b}\nattributes:\n"
               "- {name: topologyManagerPolicy, value: single-numa-node}\nzones:\n"
               "- name: node-0\n  type: Node\n  resources:\n"
               "  - {name: cpu, capacity: \"8\", allocatable: \"8\", available: \"8\"}\n");
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
// VRI would grant is bound all the same, and VRI refuses it at CreateContainer. The README's warning.
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
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    touchObject();
  }
  EXPECT_EQ(boundTo("three"), "") << "the cache took an object that does not account for the bound pod";

  // kubelet would have created it: vrid admits it, the fingerprints agree, and at the next resync the
  // cache takes the object, in which one zone still has 3 CPUs.
  ASSERT_TRUE(admitContainer("0b1c2d3e-0000-4000-8000-00000000f002", node_ + "/two", v1::GUARANTEED, 2000).ok());
  ASSERT_TRUE(testing::eventually(
      [&] { return attribute("nodeTopologyPodsFingerprint") == peersFingerprint({node_ + "/two"}); }));
  auto touched = std::chrono::steady_clock::now();
  ASSERT_TRUE(testing::eventually(
      [&] {
        if (std::chrono::steady_clock::now() - touched > std::chrono::seconds(2)) {
          touchObject();
          touched = std::chrono::steady_clock::now();
        }
        return boundTo("three") == node_;
      },
      std::chrono::seconds(40)))
      << schedulingMessage("three");
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
}

TEST_F(TopologyExportTest, RefusesANodeNameKubernetesWouldNot) {
  std::string out;
  EXPECT_EQ(testing::runCommand({VRI_NRT_EXPORTER_BINARY, "--node-name=../etc",
                                 "--kubeconfig=" + kClusterDir + "/nrt-exporter.kubeconfig"},
                                &out, tmp_.sub("bad.out")),
            2);
  EXPECT_NE(out.find("is not a DNS subdomain"), std::string::npos) << out;
}

}  // namespace
}  // namespace vri
