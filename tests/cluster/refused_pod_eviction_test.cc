// A pod VRI keeps refusing leaves the node (vri-nrt-exporter --evict-after-refusals=3, with
// deploy/refused-pod-evictor-rbac.yaml's rights): the scheduler bound a Deployment's pod by VRI's
// object, VMs took the CPUs before the pod's container was created (the race the scheduler lost),
// and kubelet's side is refused at each retry. After the third refusal the pod carries an Event with
// VRI's reason and is evicted; its replacement goes to the node that has room.
#include <sstream>

#include "tests/cluster/topology_export_fixture.h"

namespace vri::cluster_test {
namespace {

constexpr char kSecondVm[] = "7d7e0a2e-0000-4000-8000-0000000000a2";

class RefusedPodEvictionTest : public TopologyExportTest {
 protected:
  std::string exporterFlag() const override { return "--evict-after-refusals=3"; }
  void SetUp() override {
    std::string out;
    ASSERT_TRUE(kubectl({"apply", "-f", std::string(VRI_SOURCE_DIR) + "/deploy/refused-pod-evictor-rbac.yaml"}, &out))
        << out;
    TopologyExportTest::SetUp();
  }

  struct WebPod {
    std::string name, uid, node;
    bool terminating = false;
  };
  std::vector<WebPod> webPods() {
    std::string out;
    kubectl(
        {"-n", node_, "get", "pods", "-l", "app=web", "-o",
         R"(jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.spec.nodeName}. {.metadata.deletionTimestamp}{"\n"}{end})"},
        &out);
    std::vector<WebPod> pods;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      WebPod pod;
      std::string deleted;
      words >> pod.name >> pod.uid >> pod.node >> deleted;
      pod.node.pop_back();  // the '.' that keeps an unbound pod's empty node a word
      pod.terminating = !deleted.empty();
      if (!pod.uid.empty()) pods.push_back(pod);
    }
    return pods;
  }
  grpc::Status admitPod(const std::string& uid, const std::string& name) {
    v1::AdmitPodRequest request;
    request.set_pod_uid(uid);
    request.set_pod_name(name);
    request.set_qos(v1::GUARANTEED);
    grpc::ClientContext context;
    v1::PodAllocation placed;
    return admin_->AdmitPod(&context, request, &placed);
  }
};

TEST_F(RefusedPodEvictionTest, APodRefusedThreeTimesIsEvictedWithVrisReasonAndItsReplacementGoesWhereThereIsRoom) {
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(3, 4); })) << object().dump(1) << exporterLog();
  // A Deployment of one Guaranteed pod of 2 CPUs, for the nodes of this test's group: VRI's alone yet.
  ASSERT_TRUE(apply("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: " + node_ +
                    "}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n"
                    "    metadata: {labels: {app: web}}\n    spec:\n      nodeSelector: {vri-test-group: " +
                    node_ +
                    "}\n      containers:\n      - name: c\n        image: localhost/vri/pause:1.0\n"
                    "        resources: {limits: {cpu: \"2\", memory: 100Mi}}\n"));
  ASSERT_TRUE(testing::eventually(
      [&] {
        const auto pods = webPods();
        return pods.size() == 1 && pods[0].node == node_;
      },
      std::chrono::seconds(30)))
      << schedulingMessage(webPods().empty() ? "" : webPods()[0].name);
  const WebPod first = webPods()[0];

  // VMs take every CPU the pod was bound for; a second node has room.
  ASSERT_TRUE(admitVm(kVm, 4).ok());
  ASSERT_TRUE(admitVm(kSecondVm, 3).ok());
  ASSERT_TRUE(testing::eventually([&] { return availableCpus(0, 0); })) << object().dump(1);
  makeRoomyNode(node_ + "-b");

  // kubelet's side as the shim would go: the sandbox's pod admitted, its container refused at each retry.
  const std::string podName = node_ + "/" + first.name;
  ASSERT_TRUE(admitPod(first.uid, podName).ok());
  for (int retry = 0; retry < 2; ++retry) {
    ASSERT_FALSE(admitContainer(first.uid, podName, v1::GUARANTEED, 2000).ok());
  }
  ASSERT_TRUE(testing::eventually([&] {
    return exporterLog().find("pod " + first.uid + ": refused 2 of 3 times") != std::string::npos;
  })) << exporterLog();
  EXPECT_FALSE(webPods()[0].terminating) << "evicted after two refusals";
  ASSERT_FALSE(admitContainer(first.uid, podName, v1::GUARANTEED, 2000).ok());

  // VRI's reason on the pod, the pod evicted, its replacement on the node with room.
  std::string message;
  ASSERT_TRUE(testing::eventually([&] {
    kubectl({"-n", node_, "get", "events", "--field-selector", "involvedObject.uid=" + first.uid + ",reason=VriRefused",
             "-o", "jsonpath={.items[*].message}"},
            &message);
    return !message.empty();
  })) << exporterLog();
  EXPECT_NE(message.find("VRI refused it 3 times on node " + node_), std::string::npos) << message;
  EXPECT_NE(message.find("needs 2 CPUs on one NUMA node"), std::string::npos) << "vrid's own reason: " << message;
  ASSERT_TRUE(testing::eventually([&] {
    for (const WebPod& pod : webPods())
      if (pod.uid == first.uid) return pod.terminating;
    return true;  // gone
  })) << exporterLog();
  ASSERT_TRUE(testing::eventually(
      [&] {
        for (const WebPod& pod : webPods())
          if (pod.uid != first.uid && pod.node == node_ + "-b") return true;
        return false;
      },
      std::chrono::seconds(30)))
      << [&] {
           std::string pods;
           for (const WebPod& pod : webPods())
             pods += pod.name + " on '" + pod.node + "'" + (pod.terminating ? " terminating" : "") + ": " +
                     schedulingMessage(pod.name) + "\n";
           return pods;
         }();
  EXPECT_EQ(testing::count(exporterLog(), "evicted, for its controller"), 1u) << exporterLog();
}

}  // namespace
}  // namespace vri::cluster_test
