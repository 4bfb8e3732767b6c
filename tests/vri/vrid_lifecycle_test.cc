// vrid's answers over a tenant's life, beyond single calls: a pod's sandbox
// following the shared pool, a container that exited before kubelet removed
// it, a restart between a VM's admit and its start, names, and the one log
// line every refusal leaves.
#include <gmock/gmock.h>

#include "tests/vri/vrid_api_fixture.h"

namespace vri {
namespace {

using testing::container;
using ::testing::HasSubstr;
using testing::kUid;
using testing::kUid2;
using testing::kVmUuid;
using testing::vm;
using testing::VridApiTest;

TEST_F(VridApiTest, EveryRefusalLeavesOneLogLineWithTheCallAndTheReason) {
  grpc::ClientContext c1, c2;
  v1::ContainerAllocation allocation;
  EXPECT_FALSE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 9000, 9000), &allocation).ok());
  v1::ReleaseVmRequest forged;
  forged.set_uuid("x\n2026-11-24T00:00:00.000Z info forged line");
  v1::Released released;
  EXPECT_FALSE(vrid_.readOnly->ReleaseVm(&c2, forged, &released).ok());
  const std::string log = vrid_.logText();
  EXPECT_THAT(log, HasSubstr("AdmitContainer refused on the admin socket: RESOURCE_EXHAUSTED: "));
  EXPECT_THAT(log, HasSubstr("ReleaseVm refused on the read-only socket: PERMISSION_DENIED"));
  EXPECT_EQ(log.find("\n2026-11-24T00:00:00.000Z info forged"), std::string::npos);
}

// A pod's sandbox (pause) cgroup runs on the shared pool: it narrows and widens with it at once.

TEST_F(VridApiTest, ASandboxFollowsTheSharedPoolBothWays) {
  grpc::ClientContext c2, c3;
  ASSERT_TRUE(admitShimPod(kUid2, "5a5a"));
  const std::string sandbox = std::string("kubepods/burstable/pod") + kUid2 + "/5a5a";
  ASSERT_EQ(cpus("cpuset", sandbox), "0-7");
  v1::ContainerAllocation exclusive;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c2, container(kUid, v1::GUARANTEED, 2000, 2000), &exclusive).ok());
  EXPECT_EQ(cpus("cpuset", sandbox), node().shared_cpus());
  v1::ReleasePodRequest release;
  release.set_pod_uid(kUid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleasePod(&c3, release, &released).ok());
  EXPECT_EQ(cpus("cpuset", sandbox), "0-7") << "the sandbox stayed narrow after the pool widened";
}

// A shim-run pod's container exited: the runtime removed its cgroup, and kubelet has not removed the
// container yet. Reconcile leaves it gone (ownership everything), and does not call it drift.

TEST_F(VridApiTest, ReconcileDoesNotRecreateAnExitedContainersCgroup) {
  grpc::ClientContext c2, c3;
  ASSERT_TRUE(admitShimPod(kUid2, "5a5a"));
  v1::ContainerAllocation allocation;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c2, container(kUid2, v1::BURSTABLE, 100, 0, "e7e7"), &allocation).ok());
  const std::string path = std::string("kubepods/burstable/pod") + kUid2 + "/e7e7";
  ASSERT_EQ(cpus("cpuset", path), "0-7");
  for (const char* hierarchy : {"cpuset", "cpu,cpuacct", "memory", "hugetlb", "pids"}) {
    if (vrid_.fs().exists({hierarchy, *CgroupPath::parse(path)})) {
      ASSERT_TRUE(vrid_.fs().rmdir({hierarchy, *CgroupPath::parse(path)}).ok());
    }
  }
  v1::ReconcileReply report;
  ASSERT_TRUE(vrid_.admin->Reconcile(&c3, {}, &report).ok());
  for (const std::string& line : report.drift()) EXPECT_EQ(line.find("e7e7"), std::string::npos) << line;
  for (const std::string& line : report.operations()) EXPECT_EQ(line.find("e7e7"), std::string::npos) << line;
  EXPECT_FALSE(vrid_.fs().exists({"cpuset", *CgroupPath::parse(path)}));
  grpc::ClientContext c4;
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid2);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c4, get, &tenant).ok());
  EXPECT_EQ(tenant.pod().containers_size(), 1) << "the container stays admitted until the runtime removes it";
}

// libvirt's window between prepare (AdmitVm) and started (VmStarted): a
// restart inside it keeps the VM and its CPUs, and QEMU's start then lands.
TEST_F(VridApiTest, ARestartBetweenAdmitAndStartKeepsTheVm) {
  grpc::ClientContext c1, c2, c3;
  v1::VmAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c1, vm(kVmUuid, "web", 2, v1::DEDICATED), &placed).ok());
  ASSERT_TRUE(vrid_.restart());
  v1::Tenant tenant;
  v1::GetTenantRequest get;
  get.set_vm(kVmUuid);
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c2, get, &tenant).ok()) << "the restart released the VM";
  EXPECT_EQ(tenant.vm().allocation().exclusive_cpus(), placed.exclusive_cpus());
  const std::string scope = "machine/qemu-1-web.libvirt-qemu";
  fakeQemu(scope, 4243, kVmUuid, 2);
  v1::VmStartedRequest started;
  started.set_uuid(kVmUuid);
  started.set_qemu_pid(4243);
  v1::VmStartedReply where;
  ASSERT_TRUE(vrid_.admin->VmStarted(&c3, started, &where).ok());
  EXPECT_EQ(cpus("cpuset", scope + "/vcpu0"), std::to_string(placed.vcpu_cpus(0)));
}

// Six 900 KB names each fit a request, and together would make every list too large to answer.
TEST_F(VridApiTest, APodNameIsANamespaceAndANameAndNoLonger) {
  for (const std::string& name :
       {std::string(900 << 10, 'x'), "shop/" + std::string(254, 'w'), std::string("a/b\nc")}) {
    grpc::ClientContext context;
    v1::AdmitContainerRequest r = container(kUid, v1::BURSTABLE, 100, 0);
    r.set_pod_name(name);
    v1::ContainerAllocation reply;
    const grpc::Status status = vrid_.admin->AdmitContainer(&context, r, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name.size();
    EXPECT_THAT(status.error_message(), HasSubstr("pod_name"));
  }
  grpc::ClientContext context;
  v1::AdmitContainerRequest r = container(kUid, v1::BURSTABLE, 100, 0);
  r.set_pod_name(std::string(63, 'n') + "/" + std::string(253, 'p'));
  v1::ContainerAllocation reply;
  EXPECT_TRUE(vrid_.admin->AdmitContainer(&context, r, &reply).ok());
}

}  // namespace
}  // namespace vri
