// vri-cri-shim between a CRI client that calls as kubelet does and a real
// containerd (label `containerd`; start it with tests/containerd/containerd-fixture.sh up),
// with a real vrid on this machine's CPUs and a private kubepods: every
// container's CPUs come from vrid and are what the kernel, containerd and vrictl say.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "kubelet-bridge/cri_client.h"
#include "proto/vri.grpc.pb.h"
#include "tests/containerd/containerd_under_test.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/vri/vrid_process.h"

namespace vri {
namespace {

using cri_client::CriClient;
using cri_client::PodQos;
using ::testing::HasSubstr;
namespace cri = ::runtime::v1;

const testing::ContainerdUnderTest kUnderTest = testing::containerdUnderTest();
const std::string kContainerd = kUnderTest.socket();
constexpr int64_t kMemory = 64LL << 20;

std::string procStatusField(int pid, const std::string& field) {
  const std::string status = testing::readFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find(field + ":");
  if (at == std::string::npos) return "";
  const size_t start = status.find_first_not_of(" \t", at + field.size() + 1);
  return status.substr(start, status.find('\n', start) - start);
}

class CriShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the containerd tests run as root";
    ASSERT_TRUE(std::filesystem::exists(kContainerd))
        << "containerd is not running at " << kContainerd << ": " << kUnderTest.fixtureHint();
    ASSERT_GE(std::thread::hardware_concurrency(), 2u) << "these tests need 2 CPUs";
    vrid_ = std::make_unique<testing::VridProcess>(
        tmp_, "vrid",
        std::vector<std::string>{"--topology=live", "--kubelet-cgroup-root=/" + root_, "--reconcile-interval=0"});
    ASSERT_TRUE(vrid_->start());
    startShim();
    vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->socket(), grpc::InsecureChannelCredentials()));
    admin_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    // Every pod this test made, through containerd directly, then the cgroups containerd leaves.
    CriClient direct(kContainerd);
    cri::ListPodSandboxResponse sandboxes;
    if (direct.listPodSandboxes(&sandboxes).ok()) {
      for (const cri::PodSandbox& s : sandboxes.items()) {
        if (!s.metadata().uid().starts_with(uidPrefix())) continue;
        EXPECT_TRUE(direct.stopPodSandbox(s.id()).ok());
        EXPECT_TRUE(direct.removePodSandbox(s.id()).ok());
      }
    }
    stopShim();
    vrid_->stop();
    for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
      testing::removeCgroupTree(hierarchy.path().string() + "/" + root_);
  }

  void startShim() {
    shim_ = testing::spawn({VRI_CRI_SHIM_BINARY, "--listen=" + socket(), "--containerd=" + kContainerd,
                            "--vrid=" + vrid_->adminSocket(), "--vrid-timeout-ms=1000"},
                           tmp_.sub("shim.log"), O_APPEND, true);
    ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(socket()); }))
        << testing::readFile(tmp_.sub("shim.log"));
  }
  void stopShim() {
    if (shim_ <= 0) return;
    ::kill(shim_, SIGTERM);
    ::waitpid(shim_, nullptr, 0);
    shim_ = -1;
  }
  std::string socket() const { return tmp_.sub("cri.sock"); }
  std::string uidPrefix() const { return "vri-cri-test-" + std::to_string(::getpid()) + "-"; }
  std::string uid(int n) const { return uidPrefix() + std::to_string(n); }
  std::string kubepods() const { return "/" + root_ + "/kubepods"; }
  std::string cpusetOf(const std::string& parent, const std::string& id) const {
    return testing::trimmed(testing::readFile("/sys/fs/cgroup/cpuset" + parent + "/" + id + "/cpuset.cpus"));
  }

  struct Pod {
    cri::PodSandboxConfig config;
    std::string sandbox;
  };
  Pod runPod(int n, PodQos qos, uint32_t attempt = 0) {
    Pod pod{cri_client::sandboxConfig(uid(n), "pod" + std::to_string(n),
                                      cri_client::podCgroupParent(kubepods(), qos, uid(n)), attempt),
            ""};
    const grpc::Status run = cri_.runPodSandbox(pod.config, &pod.sandbox);
    EXPECT_TRUE(run.ok()) << run.error_message() << testing::readFile(tmp_.sub("shim.log"));
    return pod;
  }
  // Creates and starts; returns the id.
  std::string runContainer(const Pod& pod, const std::string& name, const cri::LinuxContainerResources& resources,
                           std::vector<std::string> args = {}, uint32_t attempt = 0) {
    std::string id;
    const grpc::Status created = cri_.createContainer(
        pod.sandbox, pod.config, cri_client::containerConfig(pod.config, name, resources, args, attempt), &id);
    EXPECT_TRUE(created.ok()) << created.error_message() << testing::readFile(tmp_.sub("shim.log"));
    if (!created.ok()) return "";
    const grpc::Status started = cri_.startContainer(id);
    EXPECT_TRUE(started.ok()) << started.error_message();
    return id;
  }
  v1::PodInfo podInfo(const std::string& podUid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_pod_uid(podUid);
    v1::Tenant tenant;
    const grpc::Status status = vri_->GetTenant(&context, request, &tenant);
    return status.ok() ? tenant.pod() : v1::PodInfo();
  }
  // A dedicated one-vCPU VM admitted through vrid's API: it takes the one CPU not reserved.
  grpc::Status admitVm(const std::string& uuid) {
    grpc::ClientContext context;
    v1::AdmitVmRequest vm;
    vm.set_uuid(uuid);
    vm.set_name("vm-" + uuid.substr(0, 4));
    vm.set_vcpus(1);
    vm.set_cpu_policy(v1::DEDICATED);
    vm.set_memory_bytes(64 << 20);
    v1::VmAllocation allocation;
    return admin_->AdmitVm(&context, vm, &allocation);
  }
  grpc::Status releaseVm(const std::string& uuid) {
    grpc::ClientContext context;
    v1::ReleaseVmRequest release;
    release.set_uuid(uuid);
    v1::Released released;
    return admin_->ReleaseVm(&context, release, &released);
  }
  std::string containerdCpus(const std::string& id) {
    cri::ContainerStatusResponse status;
    const grpc::Status asked = cri_.status(id, &status);
    return asked.ok() ? status.status().resources().linux().cpuset_cpus() : "<error: " + asked.error_message() + ">";
  }
  std::string exclusiveOf(const std::string& podUid, const std::string& container) {
    const v1::PodInfo info = podInfo(podUid);
    for (const v1::ContainerInfo& c : info.containers()) {
      if (c.resources().name() == container) return c.exclusive_cpus();
    }
    return "<none>";
  }

  testing::TempDir tmp_;
  const std::string root_ = "vri-cri-" + std::to_string(::getpid());
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_, admin_;
  pid_t shim_ = -1;
  CriClient cri_{tmp_.sub("cri.sock")};
};

TEST_F(CriShimTest, AGuaranteedContainerGetsAnExclusiveCpuEveryoneAgreesOnAndABurstableOneTheSharedPool) {
  const Pod guaranteed = runPod(1, PodQos::kGuaranteed);
  const std::string app = runContainer(guaranteed, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(app.empty());
  const std::string cpu = exclusiveOf(uid(1), "app");
  ASSERT_EQ(cpu.size(), 1u) << "one exclusive CPU, got '" << cpu << "'";
  const std::string shared = cpu == "0" ? "1" : "0";
  // The kernel: the container's cgroup and its process.
  EXPECT_EQ(cpusetOf(guaranteed.config.linux().cgroup_parent(), app), cpu);
  EXPECT_EQ(procStatusField(cri_.pid(app), "Cpus_allowed_list"), cpu);
  // containerd: the resources it holds, with no quota left unset.
  cri::ContainerStatusResponse status;
  ASSERT_TRUE(cri_.status(app, &status).ok());
  EXPECT_EQ(status.status().resources().linux().cpuset_cpus(), cpu);
  EXPECT_EQ(status.status().resources().linux().cpu_quota(), 100000);
  // vrid: the sandbox is bound and is not a container; vrictl shows it.
  const v1::PodInfo info = podInfo(uid(1));
  EXPECT_EQ(info.sandbox_id(), guaranteed.sandbox);
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().id(), app);
  EXPECT_EQ(cpusetOf(guaranteed.config.linux().cgroup_parent(), guaranteed.sandbox), shared);
  std::string listed;
  ASSERT_EQ(testing::runCommand({VRICTL_BINARY, "--socket", vrid_->socket(), "list"}, &listed, tmp_.sub("out")), 0);
  EXPECT_THAT(listed, HasSubstr(uid(1)));
  EXPECT_THAT(listed, HasSubstr("app=" + cpu));

  const Pod burstable = runPod(2, PodQos::kBurstable);
  const std::string web = runContainer(burstable, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  EXPECT_EQ(exclusiveOf(uid(2), "web"), "");
  EXPECT_EQ(cpusetOf(burstable.config.linux().cgroup_parent(), web), shared);
  EXPECT_EQ(procStatusField(cri_.pid(web), "Cpus_allowed_list"), shared);
  ASSERT_TRUE(cri_.status(web, &status).ok());
  EXPECT_EQ(status.status().resources().linux().cpu_shares(), 256);
  EXPECT_EQ(status.status().resources().linux().cpu_quota(), 50000);
}

TEST_F(CriShimTest, AContainerThatDoesNotFitIsRefusedWithTheReasonAndLeavesNothing) {
  const Pod first = runPod(1, PodQos::kGuaranteed);
  ASSERT_FALSE(runContainer(first, "app", cri_client::kubeletResources(1000, 1000, kMemory)).empty());
  const Pod second = runPod(2, PodQos::kGuaranteed);
  std::string id;
  const grpc::Status refused = cri_.createContainer(
      second.sandbox, second.config,
      cri_client::containerConfig(second.config, "app", cri_client::kubeletResources(1000, 1000, kMemory)), &id);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("vri: "));
  EXPECT_THAT(refused.error_message(), HasSubstr("CPU"));
  cri::ListContainersResponse listed;
  ASSERT_TRUE(cri_.listContainers(uid(2), &listed).ok());
  EXPECT_EQ(listed.containers_size(), 0);                   // nothing in containerd
  EXPECT_EQ(podInfo(uid(2)).containers_size(), 0);          // nothing in vrid
  EXPECT_EQ(podInfo(uid(2)).sandbox_id(), second.sandbox);  // the pod itself stays admitted
}

TEST_F(CriShimTest, ACrashedContainerRecreatedKeepsItsCpuAndRemovingTheDeadOneFreesNothing) {
  const Pod pod = runPod(1, PodQos::kGuaranteed);
  const std::string first = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory), {"exit", "1"});
  ASSERT_TRUE(cri_.waitFor(first, cri::CONTAINER_EXITED));
  const std::string cpu = exclusiveOf(uid(1), "app");
  ASSERT_EQ(cpu.size(), 1u);
  // kubelet: the replacement first, then garbage collection removes the dead one.
  const std::string second = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory), {}, 1);
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(cpusetOf(pod.config.linux().cgroup_parent(), second), cpu);
  ASSERT_TRUE(cri_.removeContainer(first).ok());
  EXPECT_TRUE(cri_.removeContainer(first).ok());  // kubelet retries: idempotent
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(podInfo(uid(1)).containers(0).resources().id(), second);

  // The same for a sandbox: kubelet stops the pod, runs a new sandbox, then removes the old one.
  ASSERT_TRUE(cri_.stopContainer(second).ok());
  ASSERT_TRUE(cri_.stopPodSandbox(pod.sandbox).ok());
  const Pod again = runPod(1, PodQos::kGuaranteed, 1);
  const std::string third = runContainer(again, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(third.empty());
  EXPECT_EQ(cpusetOf(pod.config.linux().cgroup_parent(), third), cpu);
  ASSERT_TRUE(cri_.removeContainer(second).ok());
  ASSERT_TRUE(cri_.removePodSandbox(pod.sandbox).ok());
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(podInfo(uid(1)).sandbox_id(), again.sandbox);

  // Removing the current ones releases the pod.
  ASSERT_TRUE(cri_.stopPodSandbox(again.sandbox).ok());
  ASSERT_TRUE(cri_.removeContainer(third).ok());
  ASSERT_TRUE(cri_.removePodSandbox(again.sandbox).ok());
  EXPECT_EQ(podInfo(uid(1)).uid(), "");
}

TEST_F(CriShimTest, AnInitAndAnAppContainerOfOneCpuEachRunOnTheOneFreeCpu) {
  const Pod pod = runPod(1, PodQos::kGuaranteed);
  const std::string init = runContainer(pod, "setup", cri_client::kubeletResources(1000, 1000, kMemory), {"exit", "0"});
  ASSERT_TRUE(cri_.waitFor(init, cri::CONTAINER_EXITED));
  const std::string cpu = exclusiveOf(uid(1), "setup");
  ASSERT_EQ(cpu.size(), 1u);
  const std::string app = runContainer(pod, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  ASSERT_FALSE(app.empty());
  EXPECT_EQ(exclusiveOf(uid(1), "app"), cpu);
  EXPECT_EQ(exclusiveOf(uid(1), "setup"), "");
  EXPECT_EQ(procStatusField(cri_.pid(app), "Cpus_allowed_list"), cpu);
}

TEST_F(CriShimTest, AnInPlaceResizeGoesThroughVrid) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  ASSERT_TRUE(cri_.updateResources(web, cri_client::kubeletResources(500, 1000, kMemory)).ok());
  const v1::PodInfo info = podInfo(uid(1));
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().cpu_request_milli(), 500);
  EXPECT_EQ(info.containers(0).resources().cpu_limit_milli(), 1000);
  cri::ContainerStatusResponse status;
  ASSERT_TRUE(cri_.status(web, &status).ok());
  EXPECT_EQ(status.status().resources().linux().cpu_shares(), 512);
  EXPECT_EQ(status.status().resources().linux().cpu_quota(), 100000);
  // More than the node has is refused by vrid, and containerd keeps the old values.
  const grpc::Status refused = cri_.updateResources(web, cri_client::kubeletResources(8000, 8000, kMemory));
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.error_message(), HasSubstr("vri: "));
  ASSERT_TRUE(cri_.status(web, &status).ok());
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
  EXPECT_FALSE(cri_.updateResources(web, cri_client::kubeletResources(500, 1000, kMemory)).ok());
  const v1::PodInfo info = podInfo(uid(1));
  ASSERT_EQ(info.containers_size(), 1);
  EXPECT_EQ(info.containers(0).resources().cpu_request_milli(), 250);
  EXPECT_EQ(info.containers(0).resources().cpu_limit_milli(), 500);
  EXPECT_THAT(testing::readFile(tmp_.sub("shim.log")), HasSubstr("the runtime refused it; vrid's resize undone"));
}

// A create for a pod vrid has never seen, which containerd then refuses, leaves no pod behind.
TEST_F(CriShimTest, ACreateForAnUnknownPodThatFailsLeavesNoPod) {
  const cri::PodSandboxConfig config =
      cri_client::sandboxConfig(uid(7), "pod7", cri_client::podCgroupParent(kubepods(), PodQos::kBurstable, uid(7)));
  std::string id;
  const grpc::Status created = cri_.createContainer(
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
  ASSERT_TRUE(cri_.listContainers("", &through).ok());
  ASSERT_TRUE(direct.listContainers("", &straight).ok());
  EXPECT_EQ(through.SerializeAsString(), straight.SerializeAsString());
  const auto start = std::chrono::steady_clock::now();
  std::string id;
  const grpc::Status refused = cri_.createContainer(
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

TEST_F(CriShimTest, ASharedContainerFollowsThePoolInTheKernelAndInContainerd) {
  const Pod pod = runPod(1, PodQos::kBurstable);
  const std::string web = runContainer(pod, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(web.empty());
  const std::string parent = pod.config.linux().cgroup_parent();
  ASSERT_EQ(cpusetOf(parent, web), "0-1");
  const std::string uuid = "8f0c0c01-0000-4000-8000-000000000001";
  ASSERT_TRUE(admitVm(uuid).ok());
  // vrid narrows the kernel at once (before answering); the shim brings containerd in line.
  EXPECT_EQ(cpusetOf(parent, web), "0");
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(web) == "0"; })) << containerdCpus(web);
  EXPECT_EQ(procStatusField(cri_.pid(web), "Cpus_allowed_list"), "0");
  // The shim logs the update once the runtime has answered it, which may be a moment after containerd shows it.
  const std::string followed = "shared pool: container " + web.substr(0, 13) + " now on CPUs 0 in the runtime too";
  EXPECT_TRUE(testing::eventually([&] {
    return testing::readFile(tmp_.sub("shim.log")).find(followed) != std::string::npos;
  })) << testing::readFile(tmp_.sub("shim.log"));
  ASSERT_TRUE(releaseVm(uuid).ok());
  EXPECT_EQ(cpusetOf(parent, web), "0-1");
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(web) == "0-1"; })) << containerdCpus(web);
  EXPECT_EQ(procStatusField(cri_.pid(web), "Cpus_allowed_list"), "0-1");
  // Two changes in a row: the container ends at the second.
  ASSERT_TRUE(admitVm(uuid).ok());
  ASSERT_TRUE(releaseVm(uuid).ok());
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(web) == "0-1"; })) << containerdCpus(web);
  EXPECT_TRUE(testing::eventually(
      [&] { return cpusetOf(parent, web) == "0-1" && procStatusField(cri_.pid(web), "Cpus_allowed_list") == "0-1"; }));
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
  const Made straight = make(direct, 1), through = make(cri_, 2);
  ASSERT_FALSE(straight.container.empty() || through.container.empty());

  // containerd holds the same container both ways, with the client's values; through the shim it
  // runs on the shared pool, in containerd and in the kernel.
  cri::ContainerStatusResponse a, b;
  ASSERT_TRUE(direct.status(straight.container, &a).ok());
  ASSERT_TRUE(cri_.status(through.container, &b).ok());
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
  EXPECT_EQ(procStatusField(cri_.pid(through.container), "Cpus_allowed_list"), "0-1");

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
      testing::eventually([&] { return procStatusField(cri_.pid(through.container), "Cpus_allowed_list") == "0"; }));
  ASSERT_TRUE(cri_.status(through.container, &b).ok());
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
  EXPECT_TRUE(cri_.stopPodSandbox(through.pod.sandbox).ok());
  EXPECT_TRUE(cri_.removePodSandbox(through.pod.sandbox).ok());
  EXPECT_EQ(podInfo(uid(2)).uid(), "");
}

TEST_F(CriShimTest, RestartingTheShimVridAndContainerdInTurnChangesNoCpuset) {
  const Pod guaranteed = runPod(1, PodQos::kGuaranteed);
  const std::string app = runContainer(guaranteed, "app", cri_client::kubeletResources(1000, 1000, kMemory));
  const Pod burstable = runPod(2, PodQos::kBurstable);
  const std::string web = runContainer(burstable, "web", cri_client::kubeletResources(250, 500, kMemory));
  ASSERT_FALSE(app.empty());
  ASSERT_FALSE(web.empty());
  const auto cpusets = [&] {
    return std::vector<std::string>{cpusetOf(guaranteed.config.linux().cgroup_parent(), app),
                                    cpusetOf(guaranteed.config.linux().cgroup_parent(), guaranteed.sandbox),
                                    cpusetOf(burstable.config.linux().cgroup_parent(), web), containerdCpus(app),
                                    containerdCpus(web)};
  };
  const std::vector<std::string> before = cpusets();
  ASSERT_EQ(before[0].size(), 1u);
  const std::string log_before = testing::readFile(tmp_.sub("shim.log"));

  stopShim();
  startShim();
  ASSERT_TRUE(testing::eventually([&] { return testing::readFile(tmp_.sub("shim.log")).size() > log_before.size(); }));
  // The client's connection to the old shim fails once ("Broken pipe"), as kubelet's would; it then reconnects.
  ASSERT_TRUE(testing::eventually([&] { return !containerdCpus(app).starts_with("<error"); }));
  EXPECT_EQ(cpusets(), before) << "after the shim restarted";
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  EXPECT_EQ(cpusets(), before) << "after vrid restarted";
  std::string out;
  ASSERT_EQ(
      testing::runCommand({VRI_SOURCE_DIR "/tests/containerd/containerd-fixture.sh", "restart", kUnderTest.flavour},
                          &out, tmp_.sub("out")),
      0)
      << out;
  EXPECT_TRUE(testing::eventually([&] { return containerdCpus(web) == before[4]; }));
  EXPECT_EQ(cpusets(), before) << "after containerd restarted";
  EXPECT_EQ(exclusiveOf(uid(1), "app"), before[0]);
  EXPECT_EQ(podInfo(uid(2)).containers(0).resources().id(), web);
  // The shim found containerd in line with vrid at each start and updated nothing.
  EXPECT_THAT(testing::readFile(tmp_.sub("shim.log")), ::testing::Not(HasSubstr("shared pool:")));
  EXPECT_THAT(testing::readFile(tmp_.sub("shim.log")), ::testing::Not(HasSubstr("UpdateContainerResources")));
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
                                         cri_client::podCgroupParent(kubepods(), qos, uid(n))),
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
  ASSERT_TRUE(cri_.stopPodSandbox(guaranteed.sandbox).ok());
  ASSERT_TRUE(cri_.removePodSandbox(guaranteed.sandbox).ok());
  EXPECT_EQ(podInfo(uid(1)).uid(), "");
}

TEST_F(CriShimTest, TheCriClientToolRunsListsAndRemovesPods) {
  const std::string tool = VRI_CRI_CLIENT_BINARY, at = "--socket=" + socket(), under = "--kubepods=" + kubepods();
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

}  // namespace
}  // namespace vri
