// A pod through vri-cri-shim and a VM through libvirt on one node (labels
// `libvirt` and `containerd`; both fixtures running): a Burstable pod's
// container leaves the CPU a dedicated VM takes, in the kernel and in
// containerd, comes back when the VM goes, and no restart of the shim, vrid,
// containerd or libvirtd moves anything.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "proto/vri.grpc.pb.h"
#include "tests/libvirt/libvirt_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

namespace cri = ::runtime::v1;
using cri_client::CriClient;
using testing::eventually;
using testing::trimmed;

constexpr char kContainerd[] = "/var/tmp/vri-containerd/run/containerd.sock";

class PodAndVmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "needs root";
    ASSERT_EQ(testing::virsh({"version"}, tmp_.sub("virsh.out")), 0)
        << "libvirtd is not running: start it with tests/libvirt/libvirt-fixture.sh up <build>/libvirt-bridge/vri-hook";
    ASSERT_TRUE(std::filesystem::exists(testing::kHookPath))
        << testing::kHookPath << " is missing (libvirt-fixture.sh up)";
    ASSERT_TRUE(std::filesystem::exists(kContainerd))
        << "containerd is not running: start it with tests/containerd/containerd-fixture.sh up";
    hook_ = std::make_unique<testing::InstalledHook>(VRI_HOOK_BINARY, tmp_.sub("run/admin.sock"));
    testing::cleanDomains(tmp_.sub("virsh.out"));
    vrid_ = std::make_unique<testing::VridProcess>(tmp_, "vrid", testing::mixedNodeVridFlags("/" + root_));
    ASSERT_TRUE(vrid_->start());
    startShim();
    vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->socket(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    testing::cleanDomains(tmp_.sub("virsh.out"));  // before vrid stops: the hook releases what ran
    CriClient direct(kContainerd);
    if (!sandbox_.empty()) {
      direct.stopPodSandbox(sandbox_);
      direct.removePodSandbox(sandbox_);
    }
    stopShim();
    if (vrid_) vrid_->stop();
    hook_.reset();
    for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
      testing::removeCgroupTree(hierarchy.path().string() + "/" + root_);
  }

  void startShim() {
    shim_ = testing::spawn({VRI_CRI_SHIM_BINARY, "--listen=" + tmp_.sub("cri.sock"),
                            std::string("--containerd=") + kContainerd, "--vrid=" + vrid_->adminSocket()},
                           tmp_.sub("shim.log"), O_APPEND, true);
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(tmp_.sub("cri.sock")); }));
  }
  void stopShim() {
    if (shim_ <= 0) return;
    ::kill(shim_, SIGTERM);
    ::waitpid(shim_, nullptr, 0);
    shim_ = -1;
  }
  std::string run(const std::string& script, const std::string& command) {
    std::string out;
    EXPECT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + script, command}, &out, tmp_.sub("fixture.out")), 0)
        << out;
    return out;
  }
  // The container's cpuset as the kernel, its process and containerd have it.
  std::string kernelCpus() {
    return trimmed(testing::readFile("/sys/fs/cgroup/cpuset" + parent_ + "/" + web_ + "/cpuset.cpus"));
  }
  std::string affinity() {
    const std::string status = testing::readFile("/proc/" + std::to_string(cri_.pid(web_)) + "/status");
    const size_t at = status.find("Cpus_allowed_list:");
    return at == std::string::npos ? "" : trimmed(status.substr(at + 18, status.find('\n', at) - at - 18).substr(1));
  }
  std::string containerdCpus() {
    cri::ContainerStatusResponse status;
    return cri_.status(web_, &status).ok() ? status.status().resources().linux().cpuset_cpus() : "<error>";
  }
  bool everywhere(const std::string& cpus) {
    return kernelCpus() == cpus && containerdCpus() == cpus && affinity() == cpus;
  }
  std::string vmCpu(const std::string& name) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm(name);
    v1::Tenant tenant;
    if (!vri_->GetTenant(&context, request, &tenant).ok() || tenant.vm().allocation().vcpu_cpus_size() == 0)
      return "none";
    return std::to_string(tenant.vm().allocation().vcpu_cpus(0));
  }

  testing::TempDir tmp_;
  const std::string root_ = "vri-mixed-" + std::to_string(::getpid());
  std::unique_ptr<testing::InstalledHook> hook_;
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_;
  pid_t shim_ = -1;
  CriClient cri_{tmp_.sub("cri.sock")};
  std::string sandbox_, web_, parent_;
};

TEST_F(PodAndVmTest, APodsContainerLeavesADedicatedVmsCpuAndNoRestartMovesAnything) {
  const std::string uid = root_ + "-pod";
  parent_ = cri_client::podCgroupParent("/" + root_, cri_client::PodQos::kBurstable, uid);
  const cri::PodSandboxConfig pod = cri_client::sandboxConfig(uid, "web", parent_);
  ASSERT_TRUE(cri_.runPodSandbox(pod, &sandbox_).ok());
  ASSERT_TRUE(cri_.createContainer(
                      sandbox_, pod,
                      cri_client::containerConfig(pod, "web", cri_client::kubeletResources(250, 500, 64 << 20)), &web_)
                  .ok());
  ASSERT_TRUE(cri_.startContainer(web_).ok());
  ASSERT_TRUE(everywhere("0-1")) << kernelCpus() << " " << containerdCpus() << " " << affinity();

  // A dedicated VM through libvirt: vri-hook asks vrid, which gives it CPU 1 and narrows the pod first.
  const std::string name = "vri-test-mixed";
  std::ofstream(tmp_.sub(name + ".xml")) << testing::domainXml(name, 41, "dedicated");
  std::string out;
  ASSERT_EQ(testing::virsh({"define", tmp_.sub(name + ".xml")}, tmp_.sub("virsh.out"), &out), 0) << out;
  ASSERT_EQ(testing::virsh({"start", name}, tmp_.sub("virsh.out"), &out), 0) << out << vrid_->log();
  EXPECT_EQ(vmCpu(name), "1");
  EXPECT_EQ(kernelCpus(), "0");
  EXPECT_TRUE(eventually([&] { return everywhere("0"); }))
      << kernelCpus() << " " << containerdCpus() << " " << affinity() << testing::readFile(tmp_.sub("shim.log"))
      << vrid_->log();

  // Each daemon restarted in turn: nothing moves.
  stopShim();
  startShim();
  EXPECT_TRUE(eventually([&] { return containerdCpus() != "<error>"; }));  // the client reconnects once
  EXPECT_TRUE(everywhere("0")) << "after the shim restarted";
  ASSERT_EQ(vrid_->stop(), 0);
  ASSERT_TRUE(vrid_->start());
  EXPECT_TRUE(everywhere("0")) << "after vrid restarted";
  EXPECT_TRUE(eventually([&] { return vmCpu(name) == "1"; })) << "after vrid restarted";
  run("/tests/containerd/containerd-fixture.sh", "restart");
  EXPECT_TRUE(eventually([&] { return containerdCpus() == "0"; }));
  EXPECT_TRUE(everywhere("0")) << "after containerd restarted";
  run("/tests/libvirt/libvirt-fixture.sh", "restart");
  EXPECT_TRUE(everywhere("0")) << "after libvirtd restarted";
  EXPECT_EQ(vmCpu(name), "1");

  // The VM goes: the pod's container has both CPUs again.
  ASSERT_EQ(testing::virsh({"destroy", name}, tmp_.sub("virsh.out"), &out), 0) << out;
  EXPECT_TRUE(eventually([&] { return everywhere("0-1"); }))
      << kernelCpus() << " " << containerdCpus() << " " << affinity() << testing::readFile(tmp_.sub("shim.log"))
      << vrid_->log();
}

}  // namespace
}  // namespace vri
