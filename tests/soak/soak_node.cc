#include "tests/soak/soak_node.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "tests/support/eventually.h"
#include "tests/support/loopback_http.h"
#include "tests/support/test_paths.h"
#include "tools/cri-client/cri_client.h"

namespace vri::soak {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

}  // namespace

SoakNode::SoakNode() : kubeletRoot_("vri-soak-" + std::to_string(::getpid())), stateDir_(tmp_.sub("state")) {
  require(::geteuid() == 0, "the soak needs root: it writes the host's cgroups and mounts vrid's state filesystem");
  require(testing::virsh({"version"}, tmp_.sub("virsh.out")) == 0,
          "libvirtd is not running: start it with tests/libvirt/libvirt-fixture.sh up <build>/libvirt-bridge/vri-hook");
  require(std::filesystem::exists(testing::kHookPath),
          std::string(testing::kHookPath) + " is missing: tests/libvirt/libvirt-fixture.sh up installs it");
  require(std::filesystem::exists(kContainerdSocket),
          "containerd is not running: start it with tests/containerd/containerd-fixture.sh up 1.6");

  // What an earlier soak that did not finish left in containerd: its checks would count it as this one's.
  cri_client::CriClient containerd(kContainerdSocket);
  ::runtime::v1::ListPodSandboxResponse sandboxes;
  containerd.listPodSandboxes(&sandboxes);
  for (const auto& sandbox : sandboxes.items()) {
    if (sandbox.metadata().name() != kPodName) continue;
    containerd.stopPodSandbox(sandbox.id());
    containerd.removePodSandbox(sandbox.id());
  }

  const std::string mounted = stateFs_.mount(stateDir_);
  require(mounted.empty(), mounted);
  std::filesystem::create_directories(tmp_.sub("run"));
  ::chmod(tmp_.sub("run").c_str(), 0700);

  metricsPort_ = testing::freeLoopbackPort();
  hook_ = std::make_unique<testing::InstalledHook>(VRI_HOOK_BINARY, tmp_.sub("run/admin.sock"));
  testing::cleanDomains(tmp_.sub("virsh.out"));
  // Released tenants whose cgroups are gone are given back after 3 s, not kubelet's default 300 s: a
  // QEMU killed while vrid is down must be seen as gone within one check's wait.
  std::vector<std::string> flags = testing::mixedNodeVridFlags("/" + kubeletRoot_);
  flags.insert(flags.end(), {"--release-grace=3", "--metrics-port=" + std::to_string(metricsPort_),
                             "--metrics-token-file=" + testing::writeMetricsToken(tmp_.sub("metrics.token"))});
  vrid_ = std::make_unique<testing::VridProcess>(tmp_, "vrid", std::move(flags));
  // The admin socket: reconcile and the tree are an administrator's calls.
  vri_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
}

SoakNode::~SoakNode() {
  testing::cleanDomains(tmp_.sub("virsh.out"));  // before vrid stops: the hook releases what ran
  killShim();
  if (vrid_) vrid_->stop();
  hook_.reset();
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
    testing::removeCgroupTree(hierarchy.path().string() + "/" + kubeletRoot_);
}

std::string SoakNode::shimLog() const { return testing::readFile(tmp_.sub("shim.log")); }

bool SoakNode::startVrid(std::string* why) {
  const ::testing::AssertionResult started = vrid_->start();
  if (!started && why) *why = started.message();
  return started;
}

void SoakNode::killVrid() { vrid_->stop(SIGKILL); }

bool SoakNode::startShim(std::string* why) {
  std::filesystem::remove(criSocket());
  shim_ = testing::spawn({VRI_CRI_SHIM_BINARY, "--listen=" + criSocket(),
                          std::string("--containerd=") + kContainerdSocket, "--vrid=" + vrid_->adminSocket()},
                         tmp_.sub("shim.log"), O_APPEND, true);
  if (testing::eventually([&] { return std::filesystem::exists(criSocket()); })) return true;
  if (why) *why = "vri-cri-shim did not listen within 15 s: " + shimLog();
  return false;
}

void SoakNode::killShim() {
  if (shim_ <= 0) return;
  ::kill(shim_, SIGKILL);
  ::waitpid(shim_, nullptr, 0);
  shim_ = -1;
}

bool SoakNode::runFixture(const std::string& script, const std::string& flavourOrEmpty, std::string* why) {
  std::vector<std::string> argv = {std::string(VRI_SOURCE_DIR) + script, "restart"};
  if (!flavourOrEmpty.empty()) argv.push_back(flavourOrEmpty);
  std::string out;
  if (testing::runCommand(argv, &out, tmp_.sub("fixture.out")) == 0) return true;
  if (why) *why = script + " restart: " + out;
  return false;
}

bool SoakNode::restartContainerd(std::string* why) {
  return runFixture("/tests/containerd/containerd-fixture.sh", "1.6", why);
}

bool SoakNode::restartLibvirtd(std::string* why) { return runFixture("/tests/libvirt/libvirt-fixture.sh", "", why); }

void SoakNode::fillStateFs() { stateFs_.fill(); }

void SoakNode::freeStateFs() { stateFs_.free(); }

}  // namespace vri::soak
