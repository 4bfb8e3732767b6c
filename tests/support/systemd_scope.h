// A sleeping process in a transient systemd scope, as runc (SystemdCgroup = true) or machined would
// have put a container or a VM there: for the guest's tests and benchmarks on real units.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "cgroup-model/result.h"

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
  for (int i = 0; i < 3000; ++i) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
    std::string line;
    if (std::getline(in, line) && line.find("/" + unit) != std::string::npos) return pid;
    ::usleep(10000);
  }
  ::kill(pid, SIGKILL);
  return Error::failedPrecondition("systemd-run did not start " + unit + " in 30 s");
}

// Ends the scopes of `pids` (their processes killed and reaped).
inline void stopScopes(std::vector<pid_t>& pids) {
  for (pid_t pid : pids) ::kill(pid, SIGKILL);
  for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
  pids.clear();
}

}  // namespace vri::testing
