// The node a soak runs on: one vrid on the host's real cgroup v1 hierarchies (a private kubelet root
// and libvirt's machine/ partition), this build's vri-hook installed into the libvirtd that
// tests/libvirt/libvirt-fixture.sh runs, vri-cri-shim in front of the containerd that
// tests/containerd/containerd-fixture.sh runs (1.6), and vrid's state directory on a small
// filesystem of its own, so that it can be filled. Every daemon here can be killed, restarted or
// starved; what runs on the node (tenants.h) and what must hold (node_checks.h) live elsewhere.
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <string>

#include "proto/vri.grpc.pb.h"
#include "tests/libvirt/libvirt_harness.h"
#include "tests/support/small_filesystem.h"
#include "tests/support/temp_dir.h"
#include "tests/vri/vrid_process.h"

namespace vri::soak {

inline constexpr char kContainerdSocket[] = "/var/tmp/vri-containerd/run/containerd.sock";
inline constexpr char kPodName[] = "soak";  // every soak pod's name (their UIDs differ)

class SoakNode {
 public:
  // Fails loudly (std::runtime_error naming what is missing) when a daemon or root is not there.
  SoakNode();
  ~SoakNode();
  SoakNode(const SoakNode&) = delete;
  SoakNode& operator=(const SoakNode&) = delete;

  const testing::TempDir& tmp() const { return tmp_; }
  // The kubelet cgroup root pods are placed under ("vri-soak-<pid>", below every hierarchy's root).
  const std::string& kubeletRoot() const { return kubeletRoot_; }
  std::string criSocket() const { return tmp_.sub("cri.sock"); }
  v1::Vri::Stub& vri() { return *vri_; }
  int metricsPort() const { return metricsPort_; }
  pid_t vridPid() const { return vrid_->pid(); }
  std::string vridLog() const { return vrid_->log(); }
  std::string shimLog() const;

  // vrid: started and ready, or the reason it is not.
  bool startVrid(std::string* why);
  void killVrid();  // SIGKILL, reaped
  bool vridUp() const { return vrid_->pid() > 0; }

  bool startShim(std::string* why);
  void killShim();  // SIGKILL, reaped

  // The fixtures' own restart commands: running containers and domains stay.
  bool restartContainerd(std::string* why);
  bool restartLibvirtd(std::string* why);

  // Fills the state directory's filesystem to its last byte; free() gives the room back.
  void fillStateFs();
  void freeStateFs();

 private:
  bool runFixture(const std::string& script, const std::string& flavourOrEmpty, std::string* why);

  testing::TempDir tmp_;
  std::string kubeletRoot_;
  std::string stateDir_;
  testing::SmallFilesystem stateFs_;  // unmounted after vrid is stopped: declared before it
  int metricsPort_ = 0;
  std::unique_ptr<testing::InstalledHook> hook_;
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> vri_;
  pid_t shim_ = -1;
};

}  // namespace vri::soak
