// What the tests with a real libvirtd share: test domains, virsh, and this
// build's vri-hook installed as libvirt's qemu hook (pointed at one vrid) for a
// test's life. libvirtd must have been started by tests/libvirt/libvirt-fixture.sh,
// which installs a hook first: libvirtd only looks for hooks when it starts.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/vri/vrid_process.h"

namespace vri::testing {

constexpr char kHookPath[] = "/etc/libvirt/hooks/qemu";
constexpr char kHookConfig[] = "/etc/vri/hook.conf";

// A one-vCPU, diskless test domain named `name` ("vri-test-..."), with VRI's cpu `policy` when given.
inline std::string domainXml(const std::string& name, int uuidTail, const std::string& policy,
                             const std::string& cputune = "") {
  char uuid[40];
  std::snprintf(uuid, sizeof uuid, "5e1f0c2d-7a3b-4c5d-9e6f-%012d", uuidTail);
  std::string xml = "<domain type='qemu'><name>" + name + "</name><uuid>" + uuid +
                    "</uuid><memory unit='MiB'>96</memory><vcpu placement='static'>1</vcpu>" + cputune;
  if (!policy.empty()) {
    xml +=
        "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='" + policy + "'/></vri:domain></metadata>";
  }
  return xml +
         "<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>"
         "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><serial type='pty'><target port='0'/></serial>"
         "<memballoon model='none'/></devices></domain>";
}

// vrid's flags on a node with the fixtures' libvirtd and containerd, on the host's cgroup v1 hierarchies: CPU 0
// reserved (still shared), CPU 1 free for one exclusive tenant, pods under `kubeletRoot` ("/<name>").
inline std::vector<std::string> mixedNodeVridFlags(const std::string& kubeletRoot) {
  return {"--topology=live",
          "--machine-partition=machine",
          "--reserved-cpus=0",
          "--cgroup-v1-controllers=cpuset,cpu,cpuacct",
          "--libvirt-uri=qemu:///system",
          "--kubelet-cgroup-root=" + kubeletRoot};
}

// virsh against qemu:///system; `scratch` takes its output.
inline int virsh(const std::vector<std::string>& args, const std::string& scratch, std::string* output = nullptr) {
  std::vector<std::string> argv = {"/usr/bin/virsh", "-c", "qemu:///system"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  const int rc = runCommand(argv, &out, scratch);
  if (output) *output = out;
  return rc;
}

// Destroys and undefines every test domain ("vri-test-*").
inline void cleanDomains(const std::string& scratch) {
  std::string names;
  virsh({"list", "--all", "--name"}, scratch, &names);
  std::istringstream in(names);
  for (std::string name; std::getline(in, name);) {
    if (name.rfind("vri-test-", 0) != 0) continue;
    virsh({"destroy", name}, scratch);
    virsh({"undefine", name}, scratch);
  }
}

// `hook` installed as libvirt's qemu hook, talking to the vrid at `adminSocket`, until destroyed.
class InstalledHook {
 public:
  InstalledHook(const std::string& hook, const std::string& adminSocket) {
    // Replacing an installed hook takes effect at once. A link, as the package installs it: vri-hook
    // runs the vri-hook-offline beside it when vrid is down.
    std::filesystem::remove(std::string(kHookPath) + ".new");
    std::filesystem::create_symlink(std::filesystem::canonical(hook), std::string(kHookPath) + ".new");
    std::filesystem::rename(std::string(kHookPath) + ".new", kHookPath);
    std::filesystem::create_directories("/etc/vri");
    if (std::filesystem::exists(kHookConfig)) {
      saved_ = readFile(kHookConfig);
      hadConfig_ = true;
    }
    std::ofstream(kHookConfig) << "socket = " << adminSocket << "\ntimeout_ms = 5000\n";
  }
  ~InstalledHook() {
    if (hadConfig_) {
      std::ofstream(kHookConfig) << saved_;
    } else {
      std::filesystem::remove(kHookConfig);
    }
  }
  InstalledHook(const InstalledHook&) = delete;
  InstalledHook& operator=(const InstalledHook&) = delete;

 private:
  std::string saved_;
  bool hadConfig_ = false;
};

}  // namespace vri::testing
