// vri-cri-shim between a CRI client that calls as kubelet does and a real
// containerd (label `containerd`; start it with tests/containerd/containerd-fixture.sh up),
// with a real vrid on this machine's CPUs and a private kubepods: every
// container's CPUs come from vrid and are what the kernel, containerd and vrictl say.
#include <filesystem>
#include <string>

#include "tests/containerd/kubelet_side_fixture.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using cri_client::CriClient;
using cri_client::PodQos;
using ::testing::HasSubstr;
namespace cri = ::runtime::v1;

const std::string kContainerd = testing::kUnderTest.socket();
using testing::kUnderTest;
using testing::procStatusField;

// The shim's own tests, on the kubelet side's fixture with the shim as its way in.
class CriShimTest : public testing::KubeletSideTest {
 protected:
  void startShim() { startPlacer(); }
  void stopShim() { stopPlacer(); }
  std::string socket() const { return tmp_.sub("cri.sock"); }
  std::string containerdCpus(const std::string& id) { return recorded(id, "cpus"); }
};

TEST_F(CriShimTest, AnInPlaceResizeGoesThroughVrid) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  ASSERT_TRUE(cri_->updateResources(web, cri_client::kubeletResources(500, 1000, kMemory)).ok());
  const v1::PodInfo info = podInfo(uid(1));
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().cpu_request_milli(), 500);
  EXPECT_EQ(info.containers(0).resources().cpu_limit_milli(), 1000);
  cri::ContainerStatusResponse status;
  ASSERT_TRUE(cri_->status(web, &status).ok());
  EXPECT_EQ(status.status().resources().linux().cpu_shares(), 512);
  EXPECT_EQ(status.status().resources().linux().cpu_quota(), 100000);
  // More than the node has is refused by vrid, and containerd keeps the old values.
  const grpc::Status refused = cri_->updateResources(web, cri_client::kubeletResources(8000, 8000, kMemory));
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.error_message(), HasSubstr("vri: "));
  ASSERT_TRUE(cri_->status(web, &status).ok());
  EXPECT_EQ(status.status().resources().linux().cpu_shares(), 512);
}

// containerd refuses what vrid allowed: vrid goes back to what containerd kept.
TEST_F(CriShimTest, AResizeContainerdRefusesIsUndoneInVrid) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  // Gone from containerd behind the shim's back: containerd answers NotFound, after vrid said yes.
  CriClient direct(kContainerd);
  ASSERT_TRUE(direct.stopContainer(web).ok());
  ASSERT_TRUE(direct.removeContainer(web).ok());
  EXPECT_FALSE(cri_->updateResources(web, cri_client::kubeletResources(500, 1000, kMemory)).ok());
  const v1::PodInfo info = podInfo(uid(1));
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().cpu_request_milli(), 250);
  EXPECT_EQ(info.containers(0).resources().cpu_limit_milli(), 500);
  EXPECT_THAT(testing::readFile(tmp_.sub("shim.log")), HasSubstr("the runtime refused it; vrid's resize undone"));
}

// A create for a pod vrid has never seen, which containerd then refuses, leaves no pod behind.
TEST_F(CriShimTest, ACreateForAnUnknownPodThatFailsLeavesNoPod) {
  const cri::PodSandboxConfig config =
      cri_client::sandboxConfig(uid(7), "pod7", cri_client::podCgroupParent(kubeletRoot(), PodQos::kBurstable, uid(7)));
  std::string id;
  const grpc::Status created = cri_->createContainer(
      "no-such-sandbox", config,
      cri_client::containerConfig(config, "app", cri_client::kubeletResources(250, 0, kMemory)), &id);
  EXPECT_FALSE(created.ok());
  grpc::ClientContext context;
  v1::GetTenantRequest request;
  request.set_pod_uid(uid(7));
  v1::Tenant tenant;
  EXPECT_EQ(vri_->GetTenant(&context, request, &tenant).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(CriShimTest, WithVridDownCallsPassThroughAndCreateContainerFailsClearlyWithinItsDeadline) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  ASSERT_EQ(vrid_->stop(), 0);
  CriClient direct(kContainerd);
  cri::ListContainersResponse through, straight;
  ASSERT_TRUE(cri_->listContainers("", &through).ok());
  ASSERT_TRUE(direct.listContainers("", &straight).ok());
  EXPECT_EQ(through.SerializeAsString(), straight.SerializeAsString());
  const auto start = std::chrono::steady_clock::now();
  std::string id;
  const grpc::Status refused = cri_->createContainer(
      pod.sandbox, pod.config, cri_client::containerConfig(pod.config, "web", cri_client::kubeletResources(250, 0, 0)),
      &id);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("vrid did not answer"));
  EXPECT_LT(took, std::chrono::seconds(5));  // the shim's vrid deadline is 1 s
  ASSERT_TRUE(direct.listContainers(uid(1), &straight).ok());
  EXPECT_EQ(straight.containers_size(), 0);
  ASSERT_TRUE(vrid_->start());
  EXPECT_FALSE(runContainer(pod, "web", cri_client::kubeletResources(250, 0, 0)).empty());  // kubelet's retry
}

TEST_F(CriShimTest, APodWithoutCgroupParentAndALongNameRunAsTheyRunDirectlyButOnTheSharedPool) {
  // As crictl and critest make them: no cgroup parent, a container name of 150 characters, and the
  // client's own resource values.
  const std::string name(150, 'n');
  cri::LinuxContainerResources asked;
  asked.set_cpu_shares(512);
  asked.set_cpu_period(100000);
  asked.set_cpu_quota(50000);
  asked.set_memory_limit_in_bytes(kMemory);
  struct Made {
    Pod pod;
    std::string container;
  };
  const auto make = [&](CriClient& client, int n) {
    Made made{{cri_client::sandboxConfig(uid(n), "outside" + std::to_string(n), ""), ""}, ""};
    const grpc::Status run = client.runPodSandbox(made.pod.config, &made.pod.sandbox);
    EXPECT_TRUE(run.ok()) << run.error_message() << testing::readFile(tmp_.sub("shim.log"));
    if (!run.ok()) return made;
    const grpc::Status created = client.createContainer(
        made.pod.sandbox, made.pod.config, cri_client::containerConfig(made.pod.config, name, asked), &made.container);
    EXPECT_TRUE(created.ok()) << created.error_message() << testing::readFile(tmp_.sub("shim.log"));
    if (created.ok()) {
      EXPECT_TRUE(client.startContainer(made.container).ok());
    }
    return made;
  };
  CriClient direct(kContainerd);
  const Made straight = make(direct, 1), through = make(*cri_, 2);
  ASSERT_FALSE(straight.container.empty() || through.container.empty());

  // containerd holds the same container both ways, with the client's values; through the shim it
  // runs on the shared pool, in containerd and in the kernel.
  cri::ContainerStatusResponse a, b;
  ASSERT_TRUE(direct.status(straight.container, &a).ok());
  ASSERT_TRUE(cri_->status(through.container, &b).ok());
  EXPECT_EQ(b.status().state(), a.status().state());
  EXPECT_EQ(b.status().metadata().name(), name);
  const cri::LinuxContainerResources &ra = a.status().resources().linux(), &rb = b.status().resources().linux();
  EXPECT_EQ(rb.cpu_shares(), ra.cpu_shares());
  EXPECT_EQ(rb.cpu_quota(), ra.cpu_quota());
  EXPECT_EQ(rb.cpu_period(), ra.cpu_period());
  EXPECT_EQ(rb.memory_limit_in_bytes(), ra.memory_limit_in_bytes());
  EXPECT_EQ(rb.cpuset_mems(), ra.cpuset_mems());
  EXPECT_EQ(ra.cpuset_cpus(), "");
  EXPECT_EQ(rb.cpuset_cpus(), "0-1");
  EXPECT_EQ(procStatusField(cri_->pid(through.container), "Cpus_allowed_list"), "0-1");

  // vrid holds it, outside kubelet's tree; vrictl says so.
  const v1::PodInfo info = podInfo(uid(2));
  EXPECT_TRUE(info.outside_kubelet_tree());
  EXPECT_EQ(info.sandbox_id(), through.pod.sandbox);
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().name(), name);
  EXPECT_EQ(info.containers(0).resources().id(), through.container);
  std::string listed;
  ASSERT_EQ(testing::runCommand({VRICTL_BINARY, "--socket", vrid_->socket(), "list"}, &listed, tmp_.sub("out")), 0);
  EXPECT_THAT(listed, HasSubstr("outside"));

  // A dedicated VM takes CPU 1: the container leaves it, through containerd and runc.
  const std::string uuid = "8f0c0c01-0000-4000-8000-000000000002";
  ASSERT_TRUE(admitVm(uuid).ok());
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(through.container) == "0"; }))
      << containerdCpus(through.container);
  EXPECT_TRUE(
      testing::eventually([&] { return procStatusField(cri_->pid(through.container), "Cpus_allowed_list") == "0"; }));
  ASSERT_TRUE(cri_->status(through.container, &b).ok());
  EXPECT_EQ(b.status().resources().linux().cpu_quota(), 50000);  // the rest as the client asked
  ASSERT_TRUE(releaseVm(uuid).ok());
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(through.container) == "0-1"; }))
      << containerdCpus(through.container);

  // A restarted shim adopts the pod made straight on containerd, outside kubelet's tree too; a
  // restarted vrid keeps both, though no scan of kubelet's tree finds their cgroups.
  stopShim();
  startShim();
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid(1)).outside_kubelet_tree(); }))
      << testing::readFile(tmp_.sub("shim.log"));
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(straight.container) == "0-1"; }))
      << containerdCpus(straight.container) << testing::readFile(tmp_.sub("shim.log"));
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  // (The test's channel to vrid reconnects: the first call may find it still down.)
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid(1)).outside_kubelet_tree(); })) << vrid_->log();
  EXPECT_TRUE(podInfo(uid(2)).outside_kubelet_tree());
  EXPECT_EQ(containerdCpus(through.container), "0-1");

  // Removed through the shim: released.
  EXPECT_TRUE(cri_->stopPodSandbox(through.pod.sandbox).ok());
  EXPECT_TRUE(cri_->removePodSandbox(through.pod.sandbox).ok());
  EXPECT_EQ(podInfo(uid(2)).uid(), "");
}

TEST_F(CriShimTest, APodRemovedWhileTheShimWasDownIsReleasedAtItsStart) {
  const Pod pod = runPod(1, PodQos::kGuaranteed);
  ASSERT_FALSE(runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory)).empty());
  ASSERT_EQ(exclusiveOf(uid(1), "app").size(), 1u);
  stopShim();
  CriClient direct(kContainerd);
  ASSERT_TRUE(direct.stopPodSandbox(pod.sandbox).ok());
  ASSERT_TRUE(direct.removePodSandbox(pod.sandbox).ok());
  EXPECT_EQ(podInfo(uid(1)).uid(), uid(1));  // vrid cannot know yet
  startShim();
  EXPECT_TRUE(testing::eventually([&] { return podInfo(uid(1)).uid().empty(); }))
      << testing::readFile(tmp_.sub("shim.log"));
  // Logged once vrid has answered the release, which may be a moment after vrid shows it.
  EXPECT_TRUE(testing::eventually([&] {
    return testing::readFile(tmp_.sub("shim.log")).find("its sandbox is gone from the runtime; released") !=
           std::string::npos;
  })) << testing::readFile(tmp_.sub("shim.log"));
}

TEST_F(CriShimTest, PodsThatRanBeforeTheShimAreAdoptedOnTheCpusTheyHold) {
  // Made on containerd directly, as a runtime without the shim would have: one container pinned to CPU 1.
  CriClient direct(kContainerd);
  const auto run = [&](int n, PodQos qos, const std::string& cpus, Pod* pod, std::string* container) {
    *pod = Pod{cri_client::sandboxConfig(uid(n), "pod" + std::to_string(n),
                                         cri_client::podCgroupParent(kubeletRoot(), qos, uid(n))),
               ""};
    ASSERT_TRUE(direct.runPodSandbox(pod->config, &pod->sandbox).ok());
    cri::LinuxContainerResources resources = qos == PodQos::kGuaranteed
                                                 ? cri_client::kubeletResources(1000, 1000, kMemory)
                                                 : cri_client::kubeletResources(250, 0, kMemory);
    resources.set_cpuset_cpus(cpus);
    ASSERT_TRUE(direct
                    .createContainer(pod->sandbox, pod->config,
                                     cri_client::containerConfig(pod->config, "app", resources), container)
                    .ok());
    ASSERT_TRUE(direct.startContainer(*container).ok());
  };
  Pod guaranteed, burstable;
  std::string pinned, shared;
  run(1, PodQos::kGuaranteed, "1", &guaranteed, &pinned);
  run(2, PodQos::kBurstable, "0-1", &burstable, &shared);
  EXPECT_EQ(podInfo(uid(1)).uid(), "");

  stopShim();
  startShim();  // its first pass adopts them
  ASSERT_TRUE(testing::eventually([&] {
    return exclusiveOf(uid(1), "app") == "1" && exclusiveOf(uid(2), "app") == "";
  })) << testing::readFile(tmp_.sub("shim.log"));
  EXPECT_EQ(podInfo(uid(1)).sandbox_id(), guaranteed.sandbox);  // the sandbox is the pod's, not a container
  EXPECT_EQ(podInfo(uid(1)).containers_size(), 1);
  EXPECT_EQ(podInfo(uid(1)).containers(0).resources().id(), pinned);
  EXPECT_EQ(podInfo(uid(1)).containers(0).resources().cpu_request_milli(), 1000);
  EXPECT_EQ(cpusetOf(guaranteed.config.linux().cgroup_parent(), pinned), "1");
  // CPU 1 is the Guaranteed container's now: the shared one leaves it, in the kernel and in containerd.
  EXPECT_TRUE(testing::eventually([&] {
    return cpusetOf(burstable.config.linux().cgroup_parent(), shared) == "0" && containerdCpus(shared) == "0";
  }));
  // And kubelet's later calls find them: removal releases.
  ASSERT_TRUE(cri_->stopPodSandbox(guaranteed.sandbox).ok());
  ASSERT_TRUE(cri_->removePodSandbox(guaranteed.sandbox).ok());
  EXPECT_EQ(podInfo(uid(1)).uid(), "");
}

// A container containerd runs, spinning against its CPU limit: vrid measures the pod's use in the
// cgroups runc made, held to the limit, and its memory (runc makes the pod's memory cgroup). The
// throttling is the container's own here (no kubelet sets the pod's quota), which vrid, measuring
// pods, does not count.
TEST_F(CriShimTest, AContainerThatSpinsIsMeasuredInItsPodsCgroups) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string spinner = runContainer(pod, "spin", cri_client::kubeletResources(250, 500, kMemory), {"spin"});
  ASSERT_FALSE(spinner.empty());
  v1::UsageReport report;
  const auto tenant = [&]() -> const v1::TenantUsage* {
    for (const v1::TenantUsage& t : report.samples(0).tenants())
      if (t.tenant() == "pod/" + uid(1)) return &t;
    return nullptr;
  };
  ASSERT_TRUE(testing::eventually(
      [&] {
        grpc::ClientContext context;
        if (!vri_->GetUsage(&context, {}, &report).ok() || report.samples().empty()) return false;
        const v1::TenantUsage* t = tenant();
        return t != nullptr && t->rates() && t->cpu_cores() > 0.3;
      },
      std::chrono::seconds(30)))
      << report.DebugString();
  const v1::TenantUsage* t = tenant();
  EXPECT_LE(t->cpu_cores(), 0.65) << "its limit is half a CPU";
  EXPECT_EQ(t->name(), "default/pod1");
  EXPECT_THAT(t->cgroup(), HasSubstr(uid(1)));
  EXPECT_TRUE(t->memory_measured()) << "runc made the pod's memory cgroup: " << report.DebugString();
  EXPECT_GT(t->memory_bytes(), 0u);
}

TEST_F(CriShimTest, TheCriClientToolRunsListsAndRemovesPods) {
  const std::string tool = VRI_CRI_CLIENT_BINARY, at = "--socket=" + socket(),
                    under = "--kubelet-cgroup-root=" + kubeletRoot();
  std::string out;
  ASSERT_EQ(
      testing::runCommand({tool, at, "run", "web", "--qos=guaranteed", "--cpu=1000", under}, &out, tmp_.sub("out")), 0)
      << out;
  EXPECT_THAT(out,
              ::testing::MatchesRegex("pod default/web \\(uid .*\\): sandbox .*, container app .* on CPUs [01]\n"));
  ASSERT_EQ(
      testing::runCommand({tool, at, "run", "batch", "--qos=burstable", "--cpu=250:500", under}, &out, tmp_.sub("out")),
      0)
      << out;
  EXPECT_NE(
      testing::runCommand({tool, at, "run", "big", "--qos=guaranteed", "--cpu=1000", under}, &out, tmp_.sub("out")), 0);
  EXPECT_THAT(out, HasSubstr("need 1 exclusive CPUs"));
  ASSERT_EQ(testing::runCommand({tool, at, "ps"}, &out, tmp_.sub("out")), 0);
  EXPECT_THAT(out, HasSubstr("web"));
  EXPECT_THAT(out, HasSubstr("RUNNING"));
  for (const char* pod : {"web", "batch", "big"}) {
    EXPECT_EQ(testing::runCommand({tool, at, "rm", pod}, &out, tmp_.sub("out")), 0) << out;
  }
  grpc::ClientContext context;
  v1::TenantList tenants;
  ASSERT_TRUE(vri_->ListTenants(&context, v1::ListTenantsRequest(), &tenants).ok());
  EXPECT_EQ(tenants.tenants_size(), 0);
}

// containerd takes a unique prefix of an id (crictl rmp 3f2a...); so does the shim, for what it tells
// vrid: a resize by prefix goes through vrid, and a removal by prefix releases the container and the pod.
TEST_F(CriShimTest, AUniquePrefixOfAnIdMeansToVridWhatItMeansToContainerd) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  ASSERT_TRUE(cri_->updateResources(web.substr(0, 12), cri_client::kubeletResources(500, 1000, kMemory)).ok());
  EXPECT_EQ(podInfo(uid(1)).containers(0).resources().cpu_request_milli(), 500);
  ASSERT_TRUE(cri_->stopContainer(web).ok());
  ASSERT_TRUE(cri_->removeContainer(web.substr(0, 12)).ok());
  EXPECT_EQ(podInfo(uid(1)).containers_size(), 0) << testing::readFile(tmp_.sub("shim.log"));
  ASSERT_TRUE(cri_->stopPodSandbox(pod.sandbox.substr(0, 12)).ok());
  ASSERT_TRUE(cri_->removePodSandbox(pod.sandbox.substr(0, 12)).ok());
  EXPECT_EQ(podInfo(uid(1)).uid(), "") << testing::readFile(tmp_.sub("shim.log"));
}

}  // namespace
}  // namespace vri
