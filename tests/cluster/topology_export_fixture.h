// The cluster tests' fixture: vri-nrt-exporter against the control-plane fixture
// (tests/cluster/cluster-fixture.sh, label cluster) and a real vrid (two NUMA nodes of 4 CPUs, CPU 0
// reserved, single-numa-node by default). No kubelet: Node objects are made by hand, the scheduler
// binds pods through the API, and what holds the node's CPUs are VMs and pods admitted through
// vrid's API, as kubelet's side would admit them.
#pragma once

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

namespace vri::cluster_test {

using nlohmann::json;

inline const std::string kClusterDir = "/run/vri-test-cluster";

inline std::string peersDir() {
  const char* dir = std::getenv("VRI_PEERS_DIR");
  return dir != nullptr ? dir : "";
}

class TopologyExportTest : public ::testing::Test {
 protected:
  // vrid's topology manager policy, which the object names and the plugin acts on.
  virtual std::string policy() const { return "single-numa-node"; }
  // vrid's flags besides the test defaults (tests/vri/vrid_process.h).
  virtual std::vector<std::string> vridFlags() const { return {}; }
  // One more flag for vri-nrt-exporter (a harmless one by default).
  virtual std::string exporterFlag() const { return "--api-timeout-ms=5000"; }
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

  // A second node of the group, by hand, with 8 CPUs and 16 GiB free in one zone. Its object
  // names memory too: the plugin finds no room in a zone that lacks a resource the pod asks for.
  void makeRoomyNode(const std::string& name) {
    makeNode(name, "apiVersion: topology.node.k8s.io/v1alpha2\nkind: NodeResourceTopology\nmetadata: {name: " + name +
                       "}\nattributes:\n- {name: topologyManagerPolicy, value: single-numa-node}\nzones:\n"
                       "- name: node-0\n  type: Node\n  resources:\n"
                       "  - {name: cpu, capacity: \"8\", allocatable: \"8\", available: \"8\"}\n"
                       "  - {name: memory, capacity: 16Gi, allocatable: 16Gi, available: 16Gi}\n");
  }

  void startExporter() {
    exporterPid_ = testing::spawn(
        {VRI_NRT_EXPORTER_BINARY, "--node-name=" + node_, "--kubeconfig=" + kClusterDir + "/nrt-exporter.kubeconfig",
         "--vrid=" + vrid_->socket(), "--retry-ms=200", exporterFlag()},
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

inline constexpr char kVm[] = "7d7e0a2e-0000-4000-8000-0000000000a1";

}  // namespace vri::cluster_test
