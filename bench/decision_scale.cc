// Decision cost against the number of live shared tenants: one client, serial
// exclusive admit/release pairs — a Guaranteed pod's container, and in rows of
// their own a dedicated one-vCPU VM —, with 0, 100 and 1,000 shared tenants that
// have real cgroups — BestEffort pods with one container each and shared VMs
// started through VmStarted with a live process in their emulator group —, so
// each move of the shared pool rewrites ~3 cgroups per tenant.
//
//   decision_scale [--tenants 0,100,1000] [--pairs N] [--cgroupfs fixture|kernel|both|systemd]
//                  [--partitions off|on] [--tenant-mix mixed|pods]
//
// `--partitions on` (systemd only, Linux 6.7+) runs vrid with cpuset_partitions = on: rows "systemd+p".
// `--tenant-mix pods` makes every shared tenant a pod (default: every other one a VM).
//
// `systemd` (cgroup v2, systemd as PID 1, root; tests/v2guest/suites/bench.sh) runs on the node's
// real units instead of a private subtree: each BestEffort pod is a cri-containerd-…scope in its
// kubepods-besteffort-pod…slice and each VM a delegated machine-qemu…scope in machine.slice, all
// made with systemd-run around a sleeping process, with kubelet's systemd driver and
// systemd_units = on. Its rows also give the D-Bus calls per decision and their time.
//
// Write time is the time spent inside CgroupFs calls (reads and writes) on the
// decision path, measured by a timing decorator; overhead is decision time
// minus write time. The kernel runs need root and, on cgroup v1, the cpuset
// and cpu hierarchies (a private subtree of /sys/fs/cgroup, removed after);
// on cgroup v2 a delegated scope to run in (tests/v2guest/suites/bench.sh).
// Without root only the fixture runs, and the program says so. The last lines
// are one JSON object per configuration.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_timing.h"
#include "bench/decision_measure.h"
#include "cgroup-model/cgroup_mounts.h"
#include "cgroup-model/fixture_cgroupfs.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "systemd/sd_bus_units.h"
#include "tests/support/systemd_scope.h"
#include "vri/daemon.h"

namespace {

using vri::CgroupDir;
using vri::CgroupPath;
using vri::Result;
using vri::bench::Clock;
using vri::bench::Grant;
using vri::bench::measureBoth;
using vri::bench::Row;
using vri::bench::TimingCgroupFs;
using vri::bench::TimingUnits;
using vri::bench::uid;
using vri::bench::vmUuid;
using vri::testing::startScope;

// Removes `dir` and everything below it, deepest first.
void removeTree(vri::CgroupFs& fs, const CgroupDir& dir) {
  if (!fs.exists(dir)) return;
  if (auto names = fs.children(dir); names.ok()) {
    for (const std::string& name : *names) removeTree(fs, {dir.hierarchy, *dir.path.child(name)});
  }
  if (auto removed = fs.rmdir(dir); !removed.ok())
    std::fprintf(stderr, "cleanup: %s\n", removed.error().message().c_str());
}

// cgroup v2: the cgroup this process runs in, delegated to it (a systemd scope
// with Delegate=yes). It moves itself into <cgroup>/runner and delegates cpuset
// and cpu from the cgroup, since v2 allows no processes beside delegation.
Result<CgroupPath> delegatedParent(vri::CgroupFs& fs) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::getline(in, line);
  if (line.rfind("0::/", 0) != 0) return vri::Error::failedPrecondition("not on cgroup v2: " + line);
  VRI_ASSIGN_OR_RETURN(CgroupPath own, CgroupPath::parse(line.substr(4)));
  if (own.isRoot()) return vri::Error::failedPrecondition("runs in the root cgroup: start it in a delegated scope");
  const CgroupPath runner = *own.child("runner");
  if (!fs.exists({"", runner})) VRI_TRY(fs.mkdir({"", runner}));
  VRI_TRY(fs.write({"", runner}, "cgroup.procs", std::to_string(::getpid())));
  VRI_TRY(fs.write({"", own}, "cgroup.subtree_control", "+cpuset +cpu"));
  return own;
}

// A line before each configuration's long set-up: a console that shows nothing for minutes (1,000
// units made through systemd under emulation) reads as a hung guest.
void progress(const std::string& what, int tenants) {
  std::printf("decision_scale: %s, %d tenants: setting up\n", what.c_str(), tenants);
  std::fflush(stdout);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "decision_scale: %s\n", message.c_str());
  return 1;
}

// vrid as every configuration runs it: live topology, nothing reserved, no libvirt, no periodic
// reconcile, its sockets and ledger in `stateDir`; the layout is the caller's.
vri::DaemonConfig benchConfig(const std::string& root, const std::string& stateDir) {
  vri::DaemonConfig config = vri::defaultConfig();
  config.cgroupRoot = root;
  config.topology = "live";
  config.reservedCpus.count = 0;
  config.sharedVcpuMilli = 1;
  config.vmMemoryOverheadBytes = 0;
  config.stateDir = stateDir;
  config.socket = stateDir + "/ro.sock";
  config.adminSocket = stateDir + "/admin.sock";
  config.libvirtUri = "";
  config.reconcileIntervalSeconds = 0;
  config.usageIntervalMs = 0;  // decisions alone (the sampler's cost is usage_scale's)
  config.logLevel = vri::LogLevel::kError;
  return config;
}

// How the systemd mode runs vrid and which tenants share the pool.
struct UnitsMode {
  bool partitions = false;
  bool podsOnly = false;
};

// The systemd mode: the node's own units, kubelet's systemd driver, systemd_units = on.
Result<std::vector<Row>> runOnUnits(vri::CgroupFs& base, const std::string& root, int tenants, int pairs,
                                    const std::string& stateDir, TimingUnits& systemd, UnitsMode mode) {
  progress(mode.partitions ? "systemd+p" : "systemd", tenants);
  TimingCgroupFs fs(base);
  vri::DaemonConfig config = benchConfig(root, stateDir);
  config.cpusetPartitions = mode.partitions ? vri::CpusetPartitionsMode::kOn : vri::CpusetPartitionsMode::kOff;
  config.layout.driver = vri::KubeletDriver::kSystemd;
  config.layout.libvirt = vri::LibvirtLayout::kSystemdWithLibvirtLevel;
  config.layout.machinePartition = *CgroupPath::parse("machine.slice");
  config.layout.ownership = vri::Ownership::kCpusetsAndMachine;
  config.systemdUnits = vri::SystemdUnitsMode::kOn;
  vri::Logger log(vri::LogLevel::kError);
  const auto namer = vri::makeKubeletNamer(vri::KubeletDriver::kSystemd);
  std::vector<pid_t> children;
  const auto stop_children = [&] {
    for (pid_t pid : children) ::kill(pid, SIGKILL);
    for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  };
  // The units first, as kubelet, runc and machined would have made them before vrid starts.
  std::vector<std::pair<std::string, pid_t>> vms;
  for (int n = 0; n < tenants; ++n) {
    if (n % 2 == 0 || mode.podsOnly) {
      const CgroupPath pod = *namer->pod(vri::QosClass::kBestEffort, uid(n));
      auto pid = startScope("cri-containerd-c" + std::to_string(n) + ".scope", pod.leaf(), false);
      if (!pid.ok()) return stop_children(), pid.error();
      children.push_back(*pid);
      continue;
    }
    const std::string unit = "machine-qemu\\x2d" + std::to_string(n) + "\\x2dvm" + std::to_string(n) + ".scope";
    auto pid = vri::testing::startVmScope(fs, unit);
    if (!pid.ok()) return stop_children(), pid.error();
    children.push_back(*pid);
    vms.push_back({vmUuid(n), *pid});
  }
  auto daemon = vri::Daemon::start(config, fs, log, nullptr, vri::steadyClock(), &systemd);
  if (!daemon.ok()) return stop_children(), daemon.error();
  vri::NodeManager& node = (*daemon)->node();
  Result<std::vector<Row>> row = [&]() -> Result<std::vector<Row>> {
    // vrid adopted the pods from their units at start (the sleeping "VMs" are no QEMU: admitted below).
    const size_t pods = static_cast<size_t>(mode.podsOnly ? tenants : (tenants + 1) / 2);
    if (const vri::StatePtr state = node.state(); state->pods.size() != pods)
      return vri::Error::internal("vrid adopted " + std::to_string(state->pods.size()) + " pods, not " +
                                  std::to_string(pods));
    for (size_t i = 0; i < vms.size(); ++i) {
      vri::VmSpec vm;
      vm.uuid = vms[i].first;
      vm.cpu.name = "vm" + std::to_string(2 * i + 1);
      vm.cpu.vcpus = 1;
      vm.memoryBytes = 2 << 20;
      VRI_TRY(node.admitVm(vm));
      VRI_TRY(node.vmStarted(vm.uuid, vms[i].second));
    }
    // Each granted container in a scope of its own, as runc makes it, made before its grant and gone after
    // its release: the grant writes the container's cgroup (and forms its partition) as on a node.
    std::map<std::string, pid_t> granted;
    const auto container_scopes = [&](const std::string& podUid, const std::string& id, bool made) -> Result<void> {
      if (!made) {
        std::vector<pid_t> gone = {granted[id]};
        granted.erase(id);
        vri::testing::stopScopes(gone);
        return {};
      }
      const CgroupPath pod = *namer->pod(vri::QosClass::kGuaranteed, podUid);
      // AllowedCPUs, as runc sets it from the request: systemd enables cpuset down to the scope only then.
      const std::string all = vri::CpuSet::range(0, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)) - 1).format();
      VRI_ASSIGN_OR_RETURN(granted[id], startScope("cri-containerd-" + id + ".scope", pod.leaf(), false, all));
      return {};
    };
    auto rows =
        measureBoth(mode.partitions ? "systemd+p" : "systemd", tenants, pairs, node, fs, &systemd, container_scopes);
    for (auto& [id, pid] : granted) children.push_back(pid);
    return rows;
  }();
  (*daemon)->shutdown(std::chrono::seconds(1));
  daemon->reset();
  stop_children();  // their scopes go with them
  return row;
}

// One configuration: a fresh vrid core over `fs`, `tenants` shared tenants, `pairs` exclusive pairs.
// `hierarchies` is {""} on cgroup v2, where `parent` is the delegated cgroup the bench may use.
Result<std::vector<Row>> run(const std::string& kind, vri::CgroupFs& base, bool kernel, const std::string& root,
                             const std::vector<std::string>& hierarchies, int tenants, int pairs,
                             const std::string& stateDir, const CgroupPath& parent = {}, TimingUnits* systemd = nullptr,
                             UnitsMode mode = {}) {
  if (systemd != nullptr) return runOnUnits(base, root, tenants, pairs, stateDir, *systemd, mode);
  progress(kind, tenants);
  TimingCgroupFs fs(base);
  const bool v2 = hierarchies.size() == 1 && hierarchies.front().empty();
  const CgroupPath top_path = *parent.child("vri-bench-" + std::to_string(::getpid()));
  const CgroupPath machine = *top_path.child("machine");
  const std::string cpus = vri::CpuSet::parse("0-" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN) - 1))->format();
  for (const std::string& h : hierarchies) {
    for (const CgroupPath& path : {top_path, machine}) {
      VRI_TRY(fs.mkdir({h, path}));
      if (v2) VRI_TRY(fs.write({h, path}, "cgroup.subtree_control", "+cpuset +cpu"));  // libvirt's part, for machine
      if (h == "cpuset") {
        VRI_TRY(fs.write({h, path}, "cpuset.mems", "0"));
        VRI_TRY(fs.write({h, path}, "cpuset.cpus", cpus));
      }
    }
  }
  vri::DaemonConfig config = benchConfig(root, stateDir);
  config.v1Controllers = {"cpuset", "cpu", "cpuacct"};
  config.layout.kubeletParent = top_path;
  config.layout.machinePartition = machine;
  config.layout.libvirt = vri::LibvirtLayout::kNoSystemd;
  config.layout.ownership = vri::Ownership::kEverything;
  vri::Logger log(vri::LogLevel::kError);
  VRI_ASSIGN_OR_RETURN(auto daemon, vri::Daemon::start(config, fs, log));
  vri::NodeManager& node = daemon->node();

  std::vector<pid_t> children;
  for (int n = 0; n < tenants; ++n) {
    if (n % 2 == 0) {
      const vri::PodSpec pod{uid(n), "bench/" + uid(n), vri::QosClass::kBestEffort, 0, 0};
      VRI_TRY(node.admitContainer(pod, {"app", "c" + std::to_string(n), false, 0, 0, std::nullopt, std::nullopt}));
      continue;
    }
    vri::VmSpec vm;
    vm.uuid = vmUuid(n);
    vm.cpu.name = "vm" + std::to_string(n);
    vm.cpu.vcpus = 1;
    vm.memoryBytes = 2 << 20;
    VRI_TRY(node.admitVm(vm));
    const CgroupPath scope = *machine.child("qemu-" + std::to_string(n) + "-vm" + std::to_string(n) + ".libvirt-qemu");
    for (const std::string& h : hierarchies) {
      for (const CgroupPath& path : {scope, *scope.child("emulator"), *scope.child("vcpu0")}) {
        VRI_TRY(fs.mkdir({h, path}));
        if (v2 && path != scope) VRI_TRY(fs.write({h, path}, "cgroup.type", "threaded"));
        if (h == "cpuset") {
          VRI_TRY(fs.write({h, path}, "cpuset.mems", "0"));
          VRI_TRY(fs.write({h, path}, "cpuset.cpus", cpus));
        }
      }
      if (v2) VRI_TRY(fs.write({h, scope}, "cgroup.subtree_control", "+cpuset +cpu"));
    }
    pid_t pid = 100000 + n;
    if (kernel) {
      pid = ::fork();
      if (pid == 0) {
        ::pause();
        ::_exit(0);
      }
      children.push_back(pid);
      for (const std::string& h : hierarchies) {
        if (v2) {  // the process in the scope, its thread in the threaded emulator group
          VRI_TRY(fs.write({h, scope}, "cgroup.procs", std::to_string(pid)));
          VRI_TRY(fs.write({h, *scope.child("emulator")}, "cgroup.threads", std::to_string(pid)));
        } else {
          VRI_TRY(fs.write({h, *scope.child("emulator")}, "cgroup.procs", std::to_string(pid)));
        }
      }
    } else {
      auto* fixture = dynamic_cast<vri::FixtureCgroupFs*>(&base);
      VRI_TRY(fixture->setProcFile(std::to_string(pid) + "/cgroup",
                                   "3:cpuset:/" + scope.str() + "/emulator\n1:cpu:/" + scope.str() + "/emulator\n"));
    }
    VRI_TRY(node.vmStarted(vm.uuid, pid));
  }

  auto row = measureBoth(kind, tenants, pairs, node, fs, nullptr);
  for (pid_t pid : children) ::kill(pid, SIGKILL);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  daemon->shutdown(std::chrono::seconds(1));
  daemon.reset();
  for (const std::string& h : hierarchies) removeTree(base, {h, top_path});
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts = {0, 100, 1000};
  int pairs = 20;
  std::string which = "both";
  UnitsMode mode;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tenants") {
      counts.clear();
      std::stringstream in(value);
      for (std::string n; std::getline(in, n, ',');) counts.push_back(std::stoi(n));
    } else if (flag == "--pairs") {
      pairs = std::stoi(value);
    } else if (flag == "--cgroupfs") {
      which = value;
    } else if (flag == "--partitions" && (value == "on" || value == "off")) {
      mode.partitions = value == "on";
    } else if (flag == "--tenant-mix" && (value == "mixed" || value == "pods")) {
      mode.podsOnly = value == "pods";
    } else {
      return fail("unknown flag or value: " + flag + " " + value);
    }
  }
  char pattern[] = "/var/tmp/decision-scale-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) return fail("mkdtemp failed");
  const std::string dir = pattern;
  std::vector<Row> rows;
  const int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (which != "kernel" && which != "systemd") {
    for (int tenants : counts) {
      const std::string fx = dir + "/fx" + std::to_string(tenants);
      auto fixture = vri::FixtureCgroupFs::createV1(fx, vri::CpuSet::range(0, online - 1), vri::CpuSet{0});
      if (!fixture.ok()) return fail(fixture.error().message());
      std::string mountinfo = "30 1 0:27 / " + fx + "/cgroup rw - tmpfs tmpfs rw\n";
      int id = 40;
      for (const char* h : {"cpuset", "cpu,cpuacct", "memory", "hugetlb", "pids"}) {
        mountinfo += std::to_string(id) + " 30 0:" + std::to_string(id) + " / " + fx + "/cgroup/" + h +
                     " rw - cgroup cgroup rw," + h + "\n";
        ++id;
      }
      (void)fixture->setProcFile("self/mountinfo", mountinfo);
      auto row = run("fixture", *fixture, false, fx + "/cgroup", {"cpuset", "cpu,cpuacct"}, tenants, pairs,
                     dir + "/state-fx" + std::to_string(tenants));
      if (!row.ok()) return fail("fixture, " + std::to_string(tenants) + " tenants: " + row.error().message());
      rows.insert(rows.end(), row->begin(), row->end());
    }
  }
  if (which == "systemd") {
    if (::geteuid() != 0 || ::access("/sys/fs/cgroup/cgroup.controllers", F_OK) != 0 || !vri::systemdIsRunning())
      return fail("--cgroupfs systemd needs root, cgroup v2 and systemd as the service manager");
    auto kernel = vri::KernelCgroupFs::create("/sys/fs/cgroup");
    if (!kernel.ok()) return fail(kernel.error().message());
    auto bus = vri::SdBusUnits::connect(std::chrono::milliseconds(5000));
    if (!bus.ok()) return fail(bus.error().message());
    TimingUnits units(**bus);
    for (int tenants : counts) {
      auto row = run("systemd", *kernel, true, "/sys/fs/cgroup", {""}, tenants,
                     tenants >= 1000 ? std::max(3, pairs / 4) : pairs, dir + "/state-s" + std::to_string(tenants), {},
                     &units, mode);
      if (!row.ok()) return fail("systemd, " + std::to_string(tenants) + " tenants: " + row.error().message());
      rows.insert(rows.end(), row->begin(), row->end());
    }
  } else if (which != "fixture") {
    if (::geteuid() != 0) {
      std::printf("decision_scale: not root: the kernel runs are left out (the fixture ran)\n");
    } else {
      auto kernel = vri::KernelCgroupFs::create("/sys/fs/cgroup");
      if (!kernel.ok()) return fail(kernel.error().message());
      std::vector<std::string> hierarchies;
      CgroupPath parent;
      if (::access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
        // cgroup v2: inside the delegated cgroup this runs in, after moving itself to a leaf of it.
        auto own = delegatedParent(*kernel);
        if (!own.ok()) return fail("cgroup v2: " + own.error().message());
        parent = *own;
        hierarchies = {""};
      } else {
        auto mounts = vri::readCgroupMounts(*kernel);
        if (!mounts.ok()) return fail(mounts.error().message());
        for (const char* controller : {"cpuset", "cpu", "cpuacct"}) {
          auto h = vri::v1Hierarchy(*mounts, controller, "/sys/fs/cgroup");
          if (!h.ok())
            return fail("the kernel runs need the v1 " + std::string(controller) +
                        " hierarchy: " + h.error().message());
          if (std::find(hierarchies.begin(), hierarchies.end(), *h) == hierarchies.end()) hierarchies.push_back(*h);
        }
      }
      for (int tenants : counts) {
        auto row =
            run(parent.isRoot() ? "kernel" : "kernel-v2", *kernel, true, "/sys/fs/cgroup", hierarchies, tenants,
                tenants >= 1000 ? std::max(3, pairs / 4) : pairs, dir + "/state-k" + std::to_string(tenants), parent);
        if (!row.ok()) return fail("kernel, " + std::to_string(tenants) + " tenants: " + row.error().message());
        rows.insert(rows.end(), row->begin(), row->end());
      }
    }
  }
  std::string rm = "rm -rf " + dir;
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "decision_scale: could not remove %s\n", dir.c_str());
  std::printf("%-9s %5s %8s %12s %12s %10s %12s %7s %8s %11s %8s %10s %6s %9s %12s\n", "cgroupfs", "grant", "tenants",
              "decision p50", "decision p99", "write p50", "overhead p50", "ratio", "writes", "grant/rel.", "RSS MB",
              "D-Bus p50", "calls", "tree", "tree+kernel");
  for (const Row& r : rows) {
    char apart[32];
    std::snprintf(apart, sizeof apart, "%.0f/%.0f", r.grantWrites, r.releaseWrites);
    std::printf(
        "%-9s %5s %8d %10.2fms %10.2fms %8.2fms %10.3fms %7.2f %8.0f %11s %8.1f %8.2fms %6.0f %7.2fms %10.2fms\n",
        r.cgroupfs.c_str(), r.grant.c_str(), r.tenants, r.decisionP50, r.decisionP99, r.writeP50, r.overheadP50,
        r.ratio, r.writes, apart, r.rssMb, r.dbusP50, r.dbusCalls, r.treeMs, r.treeCompareMs);
  }
  for (const Row& r : rows) {
    std::printf(
        "{\"cgroupfs\":\"%s\",\"grant\":\"%s\",\"tenants\":%d,\"decision_ms_p50\":%.3f,\"decision_ms_p99\":%.3f,"
        "\"write_ms_p50\":%.3f,"
        "\"overhead_ms_p50\":%.3f,\"ratio\":%.3f,\"writes\":%.0f,\"grant_writes\":%.0f,\"release_writes\":%.0f,"
        "\"rss_mb\":%.1f,\"dbus_ms_p50\":%.3f,\"dbus_calls\":%.0f,\"tree_ms_p50\":%.3f,\"tree_compare_ms_p50\":%.3f}\n",
        r.cgroupfs.c_str(), r.grant.c_str(), r.tenants, r.decisionP50, r.decisionP99, r.writeP50, r.overheadP50,
        r.ratio, r.writes, r.grantWrites, r.releaseWrites, r.rssMb, r.dbusP50, r.dbusCalls, r.treeMs, r.treeCompareMs);
  }
  return 0;
}
