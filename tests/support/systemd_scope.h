// A sleeping process in a transient systemd scope, as runc (SystemdCgroup = true) or machined would
// have put a container or a VM there: for the guest's tests and benchmarks on real units.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "base/result.h"
#include "cgroup-model/cgroupfs.h"
#include "tests/support/eventually.h"

namespace vri::testing {

// Starts `/bin/sleep infinity` in a new scope `unit` in `slice` through systemd-run (which execs it
// there), and waits until the kernel shows it in the scope. Kill the pid to end the scope.
// `allowedCpus`, as runc sets a container's: systemd then enables cpuset on the way down to the scope.
inline Result<pid_t> startScope(const std::string& unit, const std::string& slice, bool delegate,
                                const std::string& allowedCpus = {}) {
  const pid_t pid = ::fork();
  if (pid < 0) return Error::fromErrno(errno, "fork");
  if (pid == 0) {
    std::vector<std::string> args = {"systemd-run", "--quiet", "--scope", "--unit=" + unit, "--slice=" + slice};
    if (delegate) args.push_back("--property=Delegate=yes");
    if (!allowedCpus.empty()) args.push_back("--property=AllowedCPUs=" + allowedCpus);
    args.insert(args.end(), {"/bin/sleep", "infinity"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("systemd-run", argv.data());
    ::_exit(127);
  }
  const bool in_scope = eventually(
      [&] {
        std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
        std::string line;
        return std::getline(in, line) && line.find("/" + unit) != std::string::npos;
      },
      std::chrono::seconds(30));
  if (in_scope) return pid;
  ::kill(pid, SIGKILL);
  return Error::failedPrecondition("systemd-run did not start " + unit + " in 30 s");
}

// A "VM" as machined and libvirt lay one out: a delegated scope `unit` in machine.slice, the process
// in its libvirt/ level, its thread in libvirt/emulator, and a threaded libvirt/vcpu0 beside it.
inline Result<pid_t> startVmScope(CgroupFs& fs, const std::string& unit) {
  VRI_ASSIGN_OR_RETURN(const pid_t pid, startScope(unit, "machine.slice", true));
  const CgroupPath scope = *CgroupPath::parse("machine.slice/" + unit);
  const CgroupPath libvirt = *scope.child("libvirt");
  auto made = [&]() -> Result<void> {
    VRI_TRY(fs.mkdir({"", libvirt}));
    VRI_TRY(fs.write({"", libvirt}, "cgroup.procs", std::to_string(pid)));
    VRI_TRY(fs.write({"", scope}, "cgroup.subtree_control", "+cpuset +cpu"));
    VRI_TRY(fs.write({"", libvirt}, "cgroup.subtree_control", "+cpuset +cpu"));
    for (const char* group : {"emulator", "vcpu0"}) {
      VRI_TRY(fs.mkdir({"", *libvirt.child(group)}));
      VRI_TRY(fs.write({"", *libvirt.child(group)}, "cgroup.type", "threaded"));
    }
    return fs.write({"", *libvirt.child("emulator")}, "cgroup.threads", std::to_string(pid));
  }();
  if (!made.ok()) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return made.error();
  }
  return pid;
}

// Ends the scopes of `pids` (their processes killed and reaped).
inline void stopScopes(std::vector<pid_t>& pids) {
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  pids.clear();
}

}  // namespace vri::testing
