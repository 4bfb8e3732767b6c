// What the CRI benchmarks share: daemons started as children with their output
// in a log, waiting for a socket, percentiles, and removing the cgroups a run
// left under its private root in every hierarchy.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace vri::bench {

// Starts `argv` with stdout and stderr appended to `log`.
inline pid_t spawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::fopen(log.c_str(), "a");
    if (out != nullptr) {
      dup2(fileno(out), 1);
      dup2(fileno(out), 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Stops a child started by spawnLogged (SIGTERM) and reaps it; -1 is no child.
inline void stopChild(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
}

// Whether `path` exists within `seconds`.
inline bool waitForPath(const std::string& path, int seconds = 5) {
  for (int i = 0; i < seconds * 100 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return std::filesystem::exists(path);
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(
      std::min<double>(static_cast<double>(v.size() - 1), std::floor(p * static_cast<double>(v.size()))))];
}

// A vrid of the run's own under `dir` (state, sockets in dir/run, log), on this
// machine's CPUs, with kubepods (unless `kubeletRoot` puts it elsewhere: "/" for /kubepods) and the
// machine partition under the private cgroup `root` and no libvirt; -1 when it is not ready within 30 s.
inline pid_t startVrid(const std::string& binary, const std::string& dir, const std::string& root,
                       const std::vector<std::string>& extra = {}, const std::string& kubeletRoot = "") {
  std::filesystem::create_directories(dir + "/run");
  if (FILE* conf = std::fopen((dir + "/vrid.conf").c_str(), "w")) std::fclose(conf);  // every option at its default
  std::vector<std::string> argv = {binary,
                                   "--config=" + dir + "/vrid.conf",
                                   "--topology=live",
                                   "--state-dir=" + dir + "/state",
                                   "--socket=" + dir + "/run/vri.sock",
                                   "--admin-socket=" + dir + "/run/admin.sock",
                                   "--kubelet-cgroup-root=" + (kubeletRoot.empty() ? "/" + root : kubeletRoot),
                                   "--machine-partition=" + root + "/machine",
                                   "--libvirt-layout=no-systemd",
                                   "--libvirt-uri=",
                                   "--vm-memory-overhead=0",
                                   "--reconcile-interval=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const pid_t pid = spawnLogged(argv, dir + "/vrid.log");
  return waitForPath(dir + "/run/admin.sock", 30) ? pid : -1;  // slower under emulation, or traced
}

// Removes /sys/fs/cgroup/<every hierarchy>/<root> (v1), or /sys/fs/cgroup/<root> (v2), deepest first
// (cgroups refuse rmdir with children).
inline void removeCgroupRoot(const std::string& root) {
  std::vector<std::filesystem::path> tops = {std::filesystem::path("/sys/fs/cgroup") / root};
  if (!std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
    tops.clear();
    for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup"))
      tops.push_back(hierarchy.path() / root);
  }
  for (const std::filesystem::path& top : tops) {
    std::error_code ec;
    if (!std::filesystem::exists(top, ec)) continue;
    std::vector<std::filesystem::path> dirs;
    for (const auto& e : std::filesystem::recursive_directory_iterator(top, ec))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.rbegin(), dirs.rend());
    for (const auto& d : dirs) rmdir(d.c_str());
    rmdir(top.c_str());
  }
}

}  // namespace vri::bench
