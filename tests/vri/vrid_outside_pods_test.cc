// Pods outside kubelet's tree (a sandbox without a cgroup parent: crictl,
// critest, a debugging client) and container names as the runtime takes them:
// held in the ledger on the shared pool, never exclusive, none of their cgroups
// written by vrid, never released by a scan that cannot see them; and the
// refusals that keep the two kinds of pod apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/vri/vrid_api_fixture.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kSandbox[] = "5a5a5a";

v1::AdmitPodRequest outsidePod(const std::string& uid) {
  v1::AdmitPodRequest pod;
  pod.set_pod_uid(uid);
  pod.set_pod_name("critest/podsandbox");
  pod.set_outside_kubelet_tree(true);
  pod.set_sandbox_id(kSandbox);
  return pod;
}

// What a client other than kubelet asks for: here request and limit of two whole CPUs, which in
// kubelet's tree would be a Guaranteed container with two exclusive CPUs.
v1::AdmitContainerRequest outsideContainer(const std::string& uid, const std::string& name, const std::string& id) {
  v1::AdmitContainerRequest r = container(uid, v1::QOS_UNSPECIFIED, 2000, 2000, id, name);
  r.set_outside_kubelet_tree(true);
  return r;
}

class VridOutsidePodsTest : public VridApiTest {
 protected:
  std::string kubepodsShares() {
    auto value = vrid_.fs().read({"cpu,cpuacct", *CgroupPath::parse("kubepods")}, "cpu.shares");
    return value.ok() ? *value : "<" + value.error().message() + ">";
  }
  std::vector<std::string> podDirs() {
    std::vector<std::string> out;
    for (const char* qos : {"kubepods", "kubepods/burstable", "kubepods/besteffort"}) {
      auto children = vrid_.fs().children({"cpuset", *CgroupPath::parse(qos)});
      if (!children.ok()) continue;
      for (const std::string& child : *children) {
        if (child.starts_with("pod")) out.push_back(std::string(qos) + "/" + child);
      }
    }
    return out;
  }
};

TEST_F(VridOutsidePodsTest, APodWithoutCgroupParentRunsSharedAndVridWritesNoneOfItsCgroups) {
  const std::string kubepods_shares = kubepodsShares();
  grpc::ClientContext c1, c2, c3, c4, c5;
  v1::PodAllocation pod;
  ASSERT_TRUE(vrid_.admin->AdmitPod(&c1, outsidePod(kUid), &pod).ok());
  EXPECT_EQ(pod.cgroup_path(), "");  // the runtime's own place, which vrid does not name
  // A name no runtime id could be: 150 characters, with slashes and spaces.
  const std::string name = "a/long name " + std::string(138, 'x');
  v1::ContainerAllocation placed;
  const grpc::Status admitted = vrid_.admin->AdmitContainer(&c2, outsideContainer(kUid, name, "c0ffee"), &placed);
  ASSERT_TRUE(admitted.ok()) << admitted.error_message();
  EXPECT_FALSE(placed.exclusive());
  EXPECT_TRUE(placed.outside_kubelet_tree());
  EXPECT_EQ(placed.cpuset_cpus(), "0-7");
  EXPECT_EQ(placed.cgroup_path(), "");
  EXPECT_EQ(podDirs(), std::vector<std::string>{}) << "vrid made a cgroup for a pod the runtime places";
  // Not under kubepods: kubepods' weight does not grow with its request.
  EXPECT_EQ(kubepodsShares(), kubepods_shares);

  // A kubelet pod takes two CPUs: the outside container's allocation follows the shared pool.
  v1::ContainerAllocation exclusive;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c3, container(kUid2, v1::GUARANTEED, 2000, 2000), &exclusive).ok());
  ASSERT_TRUE(exclusive.exclusive());
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c4, get, &tenant).ok());
  EXPECT_TRUE(tenant.pod().outside_kubelet_tree());
  ASSERT_EQ(tenant.pod().containers_size(), 1);
  EXPECT_EQ(tenant.pod().containers(0).resources().name(), name);
  EXPECT_EQ(tenant.pod().containers(0).allocation().cpuset_cpus(),
            (*CpuSet::parse("0-7") - *CpuSet::parse(exclusive.cpuset_cpus())).format());
  EXPECT_TRUE(tenant.pod().containers(0).allocation().outside_kubelet_tree());

  // Released by its runtime id, as the shim does on RemoveContainer.
  v1::ReleaseContainerRequest release;
  release.set_container_id("c0ffee");
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleaseContainer(&c5, release, &released).ok());
  EXPECT_TRUE(released.released());
}

TEST_F(VridOutsidePodsTest, AReconcileThatCannotSeeItsCgroupsKeepsItAndWritesNothingForIt) {
  vrid_.config.releaseGraceSeconds = 0;  // a tenant the scan misses would go at once
  ASSERT_TRUE(vrid_.restart());
  grpc::ClientContext c1, c2, c3, c4;
  v1::PodAllocation pod;
  ASSERT_TRUE(vrid_.admin->AdmitPod(&c1, outsidePod(kUid), &pod).ok());
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c2, outsideContainer(kUid, "app", "c0ffee"), &placed).ok());
  v1::ReconcileRequest repair;
  v1::ReconcileReply report;
  ASSERT_TRUE(vrid_.admin->Reconcile(&c3, repair, &report).ok());
  EXPECT_EQ(node().pods(), 1);
  EXPECT_EQ(podDirs(), std::vector<std::string>{});
  // And after a restart, from the ledger file.
  ASSERT_TRUE(vrid_.restart());
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c4, get, &tenant).ok());
  EXPECT_TRUE(tenant.pod().outside_kubelet_tree());
  EXPECT_EQ(tenant.pod().containers_size(), 1);
  EXPECT_EQ(podDirs(), std::vector<std::string>{});
}

TEST_F(VridOutsidePodsTest, AnOutsidePodHasNoCgroupParentNorQosAndStaysOutside) {
  grpc::ClientContext c1, c2, c3, c4, c5;
  v1::PodAllocation pod;
  v1::AdmitPodRequest with_parent = outsidePod(kUid);
  with_parent.set_cgroup_parent(std::string("/kubepods/burstable/pod") + kUid);
  const grpc::Status parent = vrid_.admin->AdmitPod(&c1, with_parent, &pod);
  EXPECT_EQ(parent.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(parent.error_message(), HasSubstr("outside_kubelet_tree"));
  v1::AdmitPodRequest with_qos = outsidePod(kUid);
  with_qos.set_qos(v1::GUARANTEED);
  EXPECT_EQ(vrid_.admin->AdmitPod(&c2, with_qos, &pod).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // A kubelet pod of that UID exists: the same UID outside the tree is another pod, refused.
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c3, container(kUid, v1::BURSTABLE, 500, 0), &placed).ok());
  const grpc::Status other = vrid_.admin->AdmitContainer(&c4, outsideContainer(kUid, "second", "d00d"), &placed);
  EXPECT_EQ(other.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(other.error_message(), HasSubstr("outside kubelet's tree"));
  v1::AdmitContainerRequest nameless = outsideContainer(kUid2, "", "d00d");
  EXPECT_EQ(vrid_.admin->AdmitContainer(&c5, nameless, &placed).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(node().pods(), 1);
}

}  // namespace
}  // namespace vri::testing
