// vri-hook's cost as libvirt sees it: exec to exit of `vri-hook NAME prepare
// begin -` (a call VRI acts on: to vrid's hook socket and back) and of `vri-hook
// NAME start begin -` (one VRI ignores) with a 4 KB domain XML on stdin against
// a running vrid, beside /bin/true and a shell hook that only exits, interleaved
// in one run; then, as information, prepare while vrid is down (vri-hook-offline
// decides). With --virsh-starts N (root, libvirtd from tests/libvirt/
// libvirt-fixture.sh): also `virsh start` + `virsh destroy` of a small QEMU
// guest with the exit-only shell hook and with vri-hook installed.
//
// --hook and --vrid measure other binaries than the build tree's: the package's,
// unpacked with `dpkg-deb -x` (scripts/bench-package-hook.sh); its vri-hook finds
// vri-hook-offline in the unpacked tree's usr/libexec/vri, as it would in /usr.
//
//   ./build/bench/hook_roundtrip --runs 1000 [--virsh-starts 20] [--hook PATH --vrid PATH]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double p50 = 0, p99 = 0, mean = 0;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  Stats s;
  if (v.empty()) return s;
  s.p50 = v[v.size() / 2];
  s.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  return s;
}

double timedMs(const std::function<bool()>& run, bool& ok) {
  const auto begin = Clock::now();
  ok = run() && ok;
  return std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
}

// A 4 KB definition: a shared VM with NICs, consoles and a description.
std::string fourKilobyteDomain(const std::string& name) {
  std::string xml = "<domain type='qemu'>\n  <name>" + name +
                    "</name>\n  <uuid>3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c</uuid>\n"
                    "  <memory unit='KiB'>98304</memory>\n  <currentMemory unit='KiB'>98304</currentMemory>\n"
                    "  <vcpu placement='static'>1</vcpu>\n  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n"
                    "  </os>\n  <devices>\n    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n";
  for (int i = 0; i < 4; ++i) {
    xml += "    <interface type='user'>\n      <mac address='52:54:00:00:00:" + std::to_string(10 + i) +
           "'/>\n      <model type='virtio'/>\n    </interface>\n    <serial type='pty'><target port='" +
           std::to_string(i) + "'/></serial>\n";
  }
  // The rest of a typical definition's size: its description and metadata.
  xml += "    <memballoon model='none'/>\n  </devices>\n  <description>";
  while (xml.size() < 4050) xml += "web front end, tier 2, owner team-a; ";
  return xml + "</description>\n</domain>\n";
}

// Starts vrid and waits for its admin socket; -1 when it does not come up.
pid_t startVrid(const std::vector<std::string>& args, const std::string& adminSocket) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 200 && !std::filesystem::exists(adminSocket); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (std::filesystem::exists(adminSocket)) return pid;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "hook_roundtrip: %s\n", message.c_str());
  return 1;
}

int run(const std::vector<std::string>& argv, const std::string& scratch) {
  const auto result = vri::testing::runChild(argv, "", scratch);
  if (result.exitCode != 0) {
    std::fprintf(stderr, "%s: exit %d: %s%s", argv.back().c_str(), result.exitCode, result.out.c_str(),
                 result.err.c_str());
  }
  return result.exitCode;
}

}  // namespace

int main(int argc, char** argv) {
  const auto build = std::filesystem::canonical("/proc/self/exe").parent_path().parent_path();
  std::string vrid_binary = (build / "vri/vrid").string();
  std::string hook_binary = (build / "libvirt-bridge/vri-hook").string();
  int runs = 1000, virsh_starts = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--runs") {
      runs = std::stoi(value);
    } else if (flag == "--virsh-starts") {
      virsh_starts = std::stoi(value);
    } else if (flag == "--hook") {
      hook_binary = value;
    } else if (flag == "--vrid") {
      vrid_binary = value;
    } else {
      return fail("unknown flag " + flag);
    }
  }
  char pattern[] = "/tmp/vri-hook-bench-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return fail("mkdtemp failed");
  const std::string dir = pattern;
  const std::string admin = dir + "/admin.sock";
  // An empty configuration of vrid's own (vrid reads only a regular file only root may change).
  const std::string config = dir + "/vrid.conf";
  std::ofstream(config).close();
  const std::vector<std::string> vrid_args = {vrid_binary,
                                              "--config=" + config,
                                              "--topology=synthetic:pack:1 numa:1(memory=64GiB) core:8 pu:2",
                                              "--state-dir=" + dir + "/state",
                                              "--socket=" + dir + "/ro.sock",
                                              "--admin-socket=" + admin,
                                              "--kubelet-cgroup-root=/vri-bench-absent",
                                              "--machine-partition=vri-bench-absent/machine",
                                              "--libvirt-layout=no-systemd",
                                              "--libvirt-uri=",
                                              "--log-level=warning",
                                              "--reconcile-interval=0"};
  const pid_t vrid = startVrid(vrid_args, admin);
  if (vrid < 0) return fail("vrid did not come up");

  const std::string conf = dir + "/hook.conf";
  std::ofstream(conf) << "socket = " << admin << "\n";  // vri-hook calls hook.sock beside it
  const std::string shell_hook = dir + "/exit-hook.sh";
  std::ofstream(shell_hook) << "#!/bin/sh\nexit 0\n";
  std::filesystem::permissions(shell_hook, std::filesystem::perms::owner_all);
  const std::string xml = fourKilobyteDomain("bench");
  const std::vector<std::string> env = {"VRI_HOOK_CONFIG=" + conf};

  int failures = 0;  // the first few are shown
  const auto hookRun = [&](const char* operation, const char* sub, bool succeeds) {
    auto r = vri::testing::runChild({hook_binary, "bench", operation, sub, "-"}, xml, dir, env);
    const bool as_expected = (r.exitCode == 0) == succeeds;
    if (!as_expected && ++failures <= 3) {
      std::fprintf(stderr, "%s %s: exit %d: %s\n", operation, sub, r.exitCode, r.err.c_str());
    }
    return as_expected;
  };
  std::vector<double> t_true, t_shell, t_hook, t_ignored, t_offline;
  bool ok = true;
  for (int i = 0; i < runs; ++i) {
    t_true.push_back(timedMs([&] { return vri::testing::runChild({"/bin/true"}, xml, dir).exitCode == 0; }, ok));
    t_shell.push_back(timedMs(
        [&] {
          return vri::testing::runChild({shell_hook, "bench", "prepare", "begin", "-"}, xml, dir).exitCode == 0;
        },
        ok));
    t_hook.push_back(timedMs([&] { return hookRun("prepare", "begin", true); }, ok));
    t_ignored.push_back(timedMs([&] { return hookRun("start", "begin", true); }, ok));
  }
  ::kill(vrid, SIGTERM);
  ::waitpid(vrid, nullptr, 0);
  // vrid down: the shared VM starts, said so on stderr, decided by vri-hook-offline.
  for (int i = 0; i < std::max(1, runs / 10); ++i) {
    t_offline.push_back(timedMs([&] { return hookRun("prepare", "begin", true); }, ok));
  }
  if (!ok) return fail("a run failed");
  std::printf("exec to exit, %d runs each (vrid down: %zu), %zu-byte domain XML on stdin (ms):\n", runs,
              t_offline.size(), xml.size());
  std::vector<std::string> json;  // printed last, one line per configuration
  char line[300];
  for (const auto& [name, v] :
       {std::pair{"/bin/true", &t_true}, std::pair{"exit-only sh hook", &t_shell},
        std::pair{"vri-hook prepare", &t_hook}, std::pair{"vri-hook start (ignored)", &t_ignored},
        std::pair{"vri-hook prepare, vrid down", &t_offline}}) {
    const Stats s = stats(*v);
    std::printf("  %-28s p50 %6.2f  p99 %6.2f  mean %6.2f\n", name, s.p50, s.p99, s.mean);
    std::snprintf(line, sizeof line,
                  "{\"measure\":\"exec to exit\",\"program\":\"%s\",\"runs\":%zu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
                  "\"mean_ms\":%.2f}",
                  name, v->size(), s.p50, s.p99, s.mean);
    json.push_back(line);
  }

  if (virsh_starts > 0) {
    // libvirt picks up a replaced hook at once; the hook path must have existed when libvirtd started.
    const std::string installed = "/etc/libvirt/hooks/qemu";
    if (!std::filesystem::exists(installed)) return fail(installed + " missing: start libvirtd with the fixture");
    const std::string saved = dir + "/installed-hook";
    std::filesystem::copy(installed, saved, std::filesystem::copy_options::copy_symlinks);
    std::filesystem::create_directories("/etc/vri");
    const bool had_conf = std::filesystem::exists("/etc/vri/hook.conf");
    if (had_conf) std::filesystem::copy_file("/etc/vri/hook.conf", dir + "/saved-hook.conf");
    const pid_t vrid2 = startVrid(vrid_args, admin);
    if (vrid2 < 0) return fail("vrid did not come up");
    std::ofstream("/etc/vri/hook.conf") << "socket = " << admin << "\n";
    const std::string domain_file = dir + "/domain.xml";
    std::ofstream(domain_file) << fourKilobyteDomain("vri-test-bench");
    const std::vector<std::string> virsh = {"/usr/bin/virsh", "-c", "qemu:///system"};
    const auto v = [&](std::vector<std::string> args) {
      args.insert(args.begin(), virsh.begin(), virsh.end());
      return run(args, dir) == 0;
    };
    v({"define", domain_file});
    std::vector<double> start_shell, start_hook;
    for (int i = 0; i < virsh_starts; ++i) {
      for (int which = 0; which < 2; ++which) {
        // A link, as the package installs it (vri-hook finds vri-hook-offline beside its target).
        const std::string source = which == 0 ? shell_hook : hook_binary;
        std::filesystem::remove(installed + ".new");
        std::filesystem::create_symlink(std::filesystem::canonical(source), installed + ".new");
        std::filesystem::rename(installed + ".new", installed);
        (which == 0 ? start_shell : start_hook).push_back(timedMs([&] { return v({"start", "vri-test-bench"}); }, ok));
        v({"destroy", "vri-test-bench"});
      }
    }
    v({"undefine", "vri-test-bench"});
    std::filesystem::remove(installed + ".new");
    std::filesystem::copy(saved, installed + ".new", std::filesystem::copy_options::copy_symlinks);
    std::filesystem::rename(installed + ".new", installed);
    if (had_conf) {
      std::filesystem::copy_file(dir + "/saved-hook.conf", "/etc/vri/hook.conf",
                                 std::filesystem::copy_options::overwrite_existing);
    } else {
      std::filesystem::remove("/etc/vri/hook.conf");
    }
    ::kill(vrid2, SIGTERM);
    ::waitpid(vrid2, nullptr, 0);
    if (!ok) return fail("a virsh start failed");
    const Stats shell = stats(start_shell), hook = stats(start_hook);
    std::printf(
        "virsh start, %d runs each (ms): exit-only sh hook p50 %.1f mean %.1f; vri-hook p50 %.1f mean %.1f; "
        "difference of medians %+.1f\n",
        virsh_starts, shell.p50, shell.mean, hook.p50, hook.mean, hook.p50 - shell.p50);
    for (const auto& [name, s] : {std::pair{"exit-only sh hook", shell}, std::pair{"vri-hook", hook}}) {
      std::snprintf(line, sizeof line,
                    "{\"measure\":\"virsh start\",\"hook\":\"%s\",\"runs\":%d,\"p50_ms\":%.1f,\"mean_ms\":%.1f}", name,
                    virsh_starts, s.p50, s.mean);
      json.push_back(line);
    }
  }
  std::filesystem::remove_all(dir);
  for (const std::string& l : json) std::printf("%s\n", l.c_str());
  return 0;
}
