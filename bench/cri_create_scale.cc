// CreateContainer through vri-cri-shim, and through vri-nri-plugin on
// containerd 2.x's NRI (--via=shim,nri: both, one after the other, each with
// its own vrid and tenants), with many shared tenants in vrid's ledger, each
// with real cgroups — decision_scale's mix: BestEffort pods with
// one container, and shared one-vCPU VMs started with a live process in their
// emulator group: the time inside the shim (the shim and vrid,
// containerd's calls left out, as the shim logs it), that time without vrid's
// cgroup writes (an exclusive container shrinks the shared pool, and vrid
// rewrites every shared tenant's cgroups before it answers), and the time the
// CRI client sees end to end. Each exclusive create is measured once the
// previous pool change has landed in containerd for every shared container
// (--back-to-back: without waiting, so creates overlap containerd's and runc's
// updates of the shared containers on the same cores). Targets: p99 <= 5 ms inside the shim for shared
// containers, and for exclusive ones without vrid's cgroup writes. Counted besides, from the shim's and
// the plugin's lines: the cgroup files vrid wrote for each create (cgroup_files_min/max; with cpuset
// partitions an exclusive create's do not grow with the tenants), and the updates of shared
// containers the runtime was sent for the exclusive creates' pool changes (runtime_updates: the shim's
// pool follower's, or the shared containers the plugin's answers narrowed).
//
// --via=direct is the baseline: the same creates sent to containerd itself, with no vrid, the exclusive ones
// with the cpuset kubelet's static CPU manager would give (a CPU of their own), timed end to end.
//
//   cri_create_scale [--tenants=1000[,N...]] [--shared=50] [--exclusive=20]
//                    [--via=direct|shim|nri[,...]] [--partitions=auto|on|off] [--vrid-timeout-ms=N]
//                    [--print-windows]
//                    [--containerd=SOCK] [--nri-socket=SOCK] [--vrid=BINARY] [--shim=BINARY]
//                    [--plugin=BINARY]
//
// Needs root, 2 or more CPUs and a containerd to send the creates to: the test containerd
// (tests/containerd/containerd-fixture.sh up; up 2 for the NRI plugin, whose time inside is its
// CreateContainer handler, vrid's call and writes included: NRI's request timeout is 2 s), or any
// containerd 2.x with --containerd and --nri-socket. On cgroup v1 the run's cgroups lie under a private
// root in the cpuset and cpu hierarchies. On cgroup v2 kubepods is /kubepods, directly below the cgroup
// root, as cpuset partitions need it (--partitions is vrid's cpuset_partitions), so no kubelet may run
// there; the shared VMs lie under a private root. Each tenant count runs each way in turn, from a fresh
// vrid. The last lines are one JSON object per tenant count, way in and kind of container.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/cri_bench_support.h"
#include "bench/shared_tenants.h"
#include "proto/vri.grpc.pb.h"
#include "tools/cri-client/cri_client.h"

namespace {

namespace cri = ::runtime::v1;
using namespace vri::cri_client;
using Clock = std::chrono::steady_clock;

// The CPUs containerd holds for a container: what its ContainerStatus says (the shim's updates
// land there), or, through NRI, its OCI spec (containerd keeps NRI's adjustments out of the status).
std::string heldCpus(CriClient& client, const std::string& id, bool nri) {
  cri::ContainerStatusResponse status;
  if (!client.status(id, &status, nri).ok()) return "";
  if (!nri) return status.status().resources().linux().cpuset_cpus();
  const auto info = status.info().find("info");
  google::protobuf::Struct spec;
  if (info == status.info().end() || !google::protobuf::util::JsonStringToMessage(info->second, &spec).ok()) return "";
  const google::protobuf::Struct* at = &spec;
  for (const char* key : {"runtimeSpec", "linux", "resources", "cpu"}) {
    const auto found = at->fields().find(key);
    if (found == at->fields().end()) return "";
    at = &found->second.struct_value();
  }
  const auto cpus = at->fields().find("cpus");
  return cpus == at->fields().end() ? "" : cpus->second.string_value();
}

// Waits until containerd holds vrid's shared cpuset for every running shared container: the previous
// pool change has landed everywhere, so the next create is measured on its own.
bool settle(CriClient& client, vri::v1::Vri::Stub& admin, const std::vector<std::string>& ids, bool nri) {
  grpc::ClientContext context;
  vri::v1::Node node;
  if (!admin.GetNode(&context, vri::v1::GetNodeRequest(), &node).ok()) return false;
  const auto end = Clock::now() + std::chrono::seconds(60);
  for (const std::string& id : ids) {
    // With cpuset partitions containerd holds the wide set VRI writes (shared_cpuset), not the pool itself.
    const std::string& pool = node.shared_cpuset().empty() ? node.shared_cpus() : node.shared_cpuset();
    while (heldCpus(client, id, nri) != pool) {
      if (Clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return true;
}

// The timing of each CreateContainer from the shim's or the plugin's log: inside, vrid's cgroup
// writes, the runtime (ms; the plugin is inside the runtime's call: none).
struct Timing {
  std::vector<double> inside, writes, containerd;
  std::vector<double> files;  // how many cgroup files vrid wrote for each (none logged: older peers)
  int narrowed = 0;           // shared containers the plugin's answers narrowed (NRI updates)
};
// The cgroup files vrid wrote at each container's start (ContainerStarted), from the shim's or the
// plugin's StartContainer lines; a start that wrote nothing logs none.
std::vector<double> startFilesIn(const std::string& log) {
  std::vector<double> files;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("(vrid's cgroup writes ");
    double ms = 0;
    int n = 0;
    if (line.find("StartContainer ") != std::string::npos && at != std::string::npos &&
        std::sscanf(line.c_str() + at, "(vrid's cgroup writes %lf ms for %d files)", &ms, &n) == 2)
      files.push_back(n);
  }
  return files;
}

Timing timingsIn(const std::string& log, const char* kind) {
  Timing t;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.find("CreateContainer ") == std::string::npos || line.find(kind) == std::string::npos) continue;
    double inside = 0, writes = 0, containerd = 0;
    int files = -1;
    const size_t shim = line.find("; shim and vrid "), plugin = line.find("; plugin and vrid ");
    // The runtime's share is "runtime" in the shim's line ("containerd" in older shims, still read).
    const auto read = [&](size_t at, const char* format, int fields, double* third) {
      return at != std::string::npos && std::sscanf(line.c_str() + at, format, &inside, &writes, third) == fields;
    };
    const auto readWithFiles = [&](size_t at, const char* format, int fields) {
      return at != std::string::npos &&
             std::sscanf(line.c_str() + at, format, &inside, &writes, &files, &containerd) == fields;
    };
    if (readWithFiles(shim, "; shim and vrid %lf ms (vrid's cgroup writes %lf ms for %d files), runtime %lf ms", 4) ||
        readWithFiles(plugin, "; plugin and vrid %lf ms (vrid's cgroup writes %lf ms for %d files)", 3) ||
        read(shim, "; shim and vrid %lf ms (vrid's cgroup writes %lf ms), runtime %lf ms", 3, &containerd) ||
        read(shim, "; shim and vrid %lf ms (vrid's cgroup writes %lf ms), containerd %lf ms", 3, &containerd) ||
        read(plugin, "; plugin and vrid %lf ms (vrid's cgroup writes %lf ms)", 2, &containerd)) {
      t.inside.push_back(inside);
      t.writes.push_back(writes);
      t.containerd.push_back(containerd);
      if (files >= 0) t.files.push_back(files);
      int narrowed = 0;
      if (const size_t at = line.find("; ", plugin == std::string::npos ? 0 : plugin + 2);
          plugin != std::string::npos && at != std::string::npos &&
          std::sscanf(line.c_str() + at, "; %d shared containers narrowed", &narrowed) == 1) {
        t.narrowed += narrowed;
      }
    }
  }
  return t;
}

struct Options {
  std::string containerd = "/var/tmp/vri-containerd/run/containerd.sock";
  std::string nriSocket = "/var/tmp/vri-containerd2/run/nri.sock";
  std::string vrid = "build/vri/vrid", shim = "build/kubelet-bridge/cri-shim/vri-cri-shim";
  std::string plugin = "build/kubelet-bridge/nri-plugin/vri-nri-plugin";
  std::vector<int> tenants = {1000};
  int shared = 100, exclusive = 20;
  bool settled = true;
  std::string partitions;     // vrid's cpuset_partitions; empty: its default
  std::string vridTimeoutMs;  // the shim's and the plugin's deadline for vrid's answers; empty: theirs
  bool printWindows = false;  // each create's wall-clock interval, to find its part of a trace
};

// containerd's own creates (--via=direct), end to end p50 per kind: the baseline of the other ways' lines.
struct Baseline {
  double shared = 0, exclusive = 0;
};

// One configuration's figures, from the peer's log lines and the client's times (ms); -1 where a way
// has none (direct: everything inside).
struct Figures {
  size_t creates = 0;
  double inside_p50 = -1, inside_p99 = -1, inside_max = -1, without_writes_p50 = -1, without_writes_p99 = -1;
  double writes_p50 = -1, files_min = -1, files_max = -1, containerd_p50 = -1, e2e_p50 = 0, e2e_p99 = 0;
};
Figures figuresOf(const Timing& t, const std::vector<double>& e2e) {
  using vri::bench::percentile;
  Figures f;
  f.creates = e2e.size();
  f.e2e_p50 = percentile(e2e, 0.5);
  f.e2e_p99 = percentile(e2e, 0.99);
  if (!t.files.empty()) {
    f.files_min = *std::min_element(t.files.begin(), t.files.end());
    f.files_max = *std::max_element(t.files.begin(), t.files.end());
  }
  if (t.inside.empty()) return f;
  std::vector<double> without_writes;
  for (size_t i = 0; i < t.inside.size(); ++i) without_writes.push_back(t.inside[i] - t.writes[i]);
  f.inside_p50 = percentile(t.inside, 0.5);
  f.inside_p99 = percentile(t.inside, 0.99);
  f.inside_max = percentile(t.inside, 1.0);
  f.without_writes_p50 = percentile(without_writes, 0.5);
  f.without_writes_p99 = percentile(without_writes, 0.99);
  f.writes_p50 = percentile(t.writes, 0.5);
  f.containerd_p50 = percentile(t.containerd, 0.5);
  return f;
}

// A Guaranteed pod's container's cpuset.cpus.partition, where runc makes its cgroup under the cgroupfs
// driver on v2 ("" when there is none).
std::string partitionOf(const vri::bench::Layout& layout, const std::string& uid, const std::string& id) {
  std::ifstream in("/sys/fs/cgroup" + podCgroupParent(layout.kubeletRoot(), PodQos::kGuaranteed, uid) + "/" + id +
                   "/cpuset.cpus.partition");
  std::string state;
  std::getline(in, state);
  return state;
}

// Seconds since the epoch, as strace -ttt prints them.
double wallClock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One way in at one tenant count: through vrid from a fresh vrid with `tenants` shared tenants, or
// (direct) to containerd alone. Its JSON lines, or none when it failed; `baseline` is filled by direct.
std::vector<std::string> measure(const Options& o, const std::string& via, int tenants, Baseline& baseline) {
  const bool nri = via == "nri", direct = via == "direct";
  const std::string name = via + "-" + std::to_string(tenants);
  const std::string dir = "/tmp/vri-create-scale-" + std::to_string(getpid()) + "-" + name;
  const vri::bench::Layout layout{vri::bench::cgroupV2(), "vri-create-scale-" + std::to_string(getpid())};
  int status = 0;
  // On v2 kubepods is /kubepods: a kubelet's own, or one a failed run left, is nobody's to take.
  if (layout.v2 && std::filesystem::exists("/sys/fs/cgroup/kubepods")) {
    std::fprintf(stderr, "cri_create_scale: /sys/fs/cgroup/kubepods exists: a kubelet runs here, or a run left it\n");
    return {};
  }
  std::filesystem::create_directories(dir);
  vri::bench::makeNodeCgroups(layout);  // kubelet and libvirt made theirs before vrid starts
  // A shared vCPU asks 1m of the pool, as in decision_scale, so that 500 shared VMs fit on 2 CPUs.
  std::vector<std::string> flags = {"--shared-vcpu-request=1m"};
  if (!o.partitions.empty()) flags.push_back("--cpuset-partitions=" + o.partitions);
  const pid_t vrid_pid = direct ? 0 : vri::bench::startVrid(o.vrid, dir, layout.root, flags, layout.kubeletRoot());
  if (vrid_pid < 0) status = 1;
  auto admin =
      vri::v1::Vri::NewStub(grpc::CreateChannel("unix:" + dir + "/run/admin.sock", grpc::InsecureChannelCredentials()));
  bool partitions = false;
  if (status == 0 && !direct) {
    grpc::ClientContext context;
    vri::v1::Node node;
    if (!admin->GetNode(&context, vri::v1::GetNodeRequest(), &node).ok()) status = 1;
    partitions = node.cpuset_partitions();
  }

  // The shared tenants: each container's cgroup made as runc would, then admitted with its id bound.
  const auto started = Clock::now();
  std::vector<pid_t> qemus;  // the shared VMs' stand-in processes
  for (int n = 0; status == 0 && !direct && n < tenants; ++n) {
    const grpc::Status admitted =
        n % 2 == 0 ? vri::bench::addPodTenant(*admin, layout, n) : vri::bench::addVmTenant(*admin, layout, n, qemus);
    if (!admitted.ok()) {
      std::fprintf(stderr, "cri_create_scale: tenant %d: %s\n", n, admitted.error_message().c_str());
      status = 1;
    }
  }
  if (!direct)
    std::printf("%s: %d shared tenants with cgroups admitted in %.1f s (cgroup %s, cpuset partitions %s)\n",
                name.c_str(), tenants, std::chrono::duration<double>(Clock::now() - started).count(),
                layout.v2 ? "v2" : "v1", partitions ? "on" : "off");

  // The shim in front of containerd, or the plugin on its NRI socket with kubelet's calls going to containerd.
  const std::string log = dir + (nri ? "/plugin.log" : "/shim.log");
  std::vector<std::string> plugin = {o.plugin, "--nri-socket=" + o.nriSocket, "--vrid=" + dir + "/run/admin.sock"};
  std::vector<std::string> shim = {o.shim, "--listen=" + dir + "/cri.sock", "--containerd=" + o.containerd,
                                   "--vrid=" + dir + "/run/admin.sock"};
  if (!o.vridTimeoutMs.empty()) {
    plugin.push_back("--vrid-timeout-ms=" + o.vridTimeoutMs);
    shim.push_back("--vrid-timeout-ms=" + o.vridTimeoutMs);
  }
  pid_t peer_pid = 0;
  if (nri)
    peer_pid = vri::bench::spawnLogged(plugin, log);
  else if (!direct)
    peer_pid = vri::bench::spawnLogged(shim, log);
  if (status == 0 && !nri && !direct && !vri::bench::waitForPath(dir + "/cri.sock")) status = 1;
  if (status == 0 && nri) {
    const auto until = Clock::now() + std::chrono::seconds(30);
    for (;;) {
      std::ifstream in(log);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("registered with the runtime's NRI") != std::string::npos) break;
      if (Clock::now() > until) {
        std::fprintf(stderr, "cri_create_scale: the plugin did not register:\n%s", text.c_str());
        status = 1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  CriClient client(nri || direct ? o.containerd : dir + "/cri.sock");
  // Sent straight to containerd, the cpusets kubelet's static CPU manager would give: the shared pool (every
  // CPU here) for a shared container, a CPU of its own (the last) for an exclusive one.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string every_cpu = "0-" + std::to_string(cpus - 1), own_cpu = std::to_string(cpus - 1);
  std::vector<double> shared_e2e, exclusive_e2e;
  int partitions_at_start = 0;  // exclusive containers that were root partitions when their start returned
  std::vector<std::string> shared_ids;
  std::vector<std::string> sandboxes;
  // shared: a Burstable pod each (a pod's own cgroups are rewritten with each of its containers, so one pod
  // of many containers would measure the pod's size, not the node's)
  for (int i = 0; status == 0 && i < o.shared; ++i) {
    const std::string uid = layout.root + "-b" + std::to_string(i);
    const cri::PodSandboxConfig pod =
        sandboxConfig(uid, "b" + std::to_string(i), podCgroupParent(layout.kubeletRoot(), PodQos::kBurstable, uid));
    std::string sandbox, id;
    if (!client.runPodSandbox(pod, &sandbox).ok()) status = 1;
    sandboxes.push_back(sandbox);
    cri::LinuxContainerResources resources = kubeletResources(4, 0, 0);
    if (direct) resources.set_cpuset_cpus(every_cpu);
    const auto start = Clock::now();
    const double wall_start = wallClock();
    if (status == 0 && !client.createContainer(sandbox, pod, containerConfig(pod, "app", resources), &id).ok())
      status = 1;
    shared_e2e.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (o.printWindows)
      std::printf("%s shared create %d: wall clock %.6f to %.6f\n", name.c_str(), i, wall_start, wallClock());
    if (status == 0 && !client.startContainer(id).ok()) status = 1;  // running: a pool change is runc's work too
    shared_ids.push_back(id);
  }
  for (int i = 0; status == 0 && i < o.exclusive; ++i) {  // exclusive: a Guaranteed pod each, removed again
    // Through NRI before v0.12.1 the pool's updates reach containerd's records only with the plugin's next
    // answer (an unsolicited one can deadlock containerd), so they cannot settle before the next create;
    // the kernel's cgroups are vrid's at once either way.
    if (o.settled && !nri && !direct && !settle(client, *admin, shared_ids, nri)) status = 1;
    const std::string uid = layout.root + "-g" + std::to_string(i);
    const cri::PodSandboxConfig pod =
        sandboxConfig(uid, "g" + std::to_string(i), podCgroupParent(layout.kubeletRoot(), PodQos::kGuaranteed, uid));
    std::string sandbox, id;
    if (!client.runPodSandbox(pod, &sandbox).ok()) {
      status = 1;
      break;
    }
    cri::LinuxContainerResources resources = kubeletResources(1000, 1000, 64 << 20);
    if (direct) resources.set_cpuset_cpus(own_cpu);
    const auto start = Clock::now();
    const double wall_start = wallClock();
    const grpc::Status created = client.createContainer(sandbox, pod, containerConfig(pod, "app", resources), &id);
    exclusive_e2e.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (o.printWindows)
      std::printf("%s exclusive create %d: wall clock %.6f to %.6f\n", name.c_str(), i, wall_start, wallClock());
    if (!created.ok()) {
      std::fprintf(stderr, "cri_create_scale: exclusive: %s\n", created.error_message().c_str());
      status = 1;
    }
    // Started, as kubelet starts it next: the runtime makes its cgroup now. With cpuset partitions the
    // container must be a root partition as soon as the start returns, or the shared tenants keep its CPU.
    const double wall_started = wallClock();
    if (status == 0 && !client.startContainer(id).ok()) status = 1;
    if (o.printWindows)
      std::printf("%s exclusive start %d: wall clock %.6f to %.6f\n", name.c_str(), i, wall_started, wallClock());
    if (status == 0 && partitions) {
      const std::string state = partitionOf(layout, uid, id);
      if (state == "root") ++partitions_at_start;
      if (state != "root" || o.printWindows)
        std::printf("%s exclusive container %d: cpuset.cpus.partition \"%s\" once started\n", name.c_str(), i,
                    state.c_str());
    }
    client.stopPodSandbox(sandbox);
    client.removeContainer(id);
    client.removePodSandbox(sandbox);
  }
  // Through NRI: the plugin restarted with the shared containers running, its Synchronize timed (NRI's 2-s
  // request timeout bounds it whole), as the plugin logs it.
  pid_t plugin_pid = peer_pid;
  double sync_ms = -1;
  if (status == 0 && nri) {
    vri::bench::stopChild(plugin_pid);
    const std::string again = dir + "/plugin-again.log";
    plugin_pid = vri::bench::spawnLogged(plugin, again);
    const auto until = Clock::now() + std::chrono::seconds(30);
    while (sync_ms < 0 && Clock::now() < until) {
      std::ifstream in(again);
      for (std::string line; std::getline(in, line);) {
        const size_t at = line.find(" containers in ");
        if (line.find("synchronized ") != std::string::npos && at != std::string::npos)
          std::sscanf(line.c_str() + at, " containers in %lf ms", &sync_ms);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("nri: Synchronize with %zu running containers and %d tenants: %.3f ms\n", shared_ids.size(), tenants,
                sync_ms);
  }
  for (const std::string& sandbox : sandboxes) {
    client.stopPodSandbox(sandbox);
    client.removePodSandbox(sandbox);
  }
  vri::bench::stopChild(plugin_pid);
  vri::bench::stopChild(vrid_pid);

  // Updates of shared containers' resources the pool's changes cost the runtime: the shim's pool
  // follower's, one line each; through NRI, the plugin's answers' (counted from its create lines).
  int follower_updates = 0;
  {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      follower_updates += line.find(" in the runtime too") != std::string::npos;
  }
  if (direct && status == 0)
    baseline = {vri::bench::percentile(shared_e2e, 0.5), vri::bench::percentile(exclusive_e2e, 0.5)};
  std::vector<std::string> json;
  for (const auto& [kind, marker, e2e, base] :
       {std::tuple{"shared", "(shared pool)", shared_e2e, baseline.shared},
        std::tuple{"exclusive", "(exclusive)", exclusive_e2e, baseline.exclusive}}) {
    const Timing t = direct ? Timing() : timingsIn(log, marker);
    Figures f = figuresOf(t, e2e);
    if (nri) f.containerd_p50 = -1;  // the plugin runs inside containerd's call: no share of its own
    int updates = -1;                // direct: none to count
    if (!direct) updates = nri ? t.narrowed : std::string(kind) == "exclusive" ? follower_updates : 0;
    // No create timed (the log line not found) is a miss, never a pass: shared creates inside the shim or
    // plugin, exclusive ones without vrid's cgroup writes, within 5 ms at p99. Through NRI the whole
    // handler, vrid's writes included, stays within 1 s of NRI's 2-s request timeout.
    const double p99 = std::string(kind) == "shared" ? f.inside_p99 : f.without_writes_p99;
    const bool met = f.inside_p50 >= 0 && p99 <= 5 && (!nri || f.inside_max <= 1000);
    const double vs_direct = !direct && base > 0 ? f.e2e_p50 / base : -1;
    // The starts' own writes (the exclusive containers' partitions; shared starts write nothing).
    std::vector<double> start_files =
        direct || std::string(kind) == "shared" ? std::vector<double>{} : startFilesIn(log);
    const double start_min = start_files.empty() ? -1 : *std::min_element(start_files.begin(), start_files.end());
    const double start_max = start_files.empty() ? -1 : *std::max_element(start_files.begin(), start_files.end());
    if (direct) {
      std::printf("%-10s %-9s %3zu creates straight to containerd: end to end p50 %.1f p99 %.1f ms\n", name.c_str(),
                  kind, f.creates, f.e2e_p50, f.e2e_p99);
    } else {
      std::printf(
          "%-10s %-9s %3zu creates: inside p50 %.3f p99 %.3f max %.3f ms; without vrid's cgroup writes p50 %.3f p99 "
          "%.3f ms; vrid's writes p50 %.3f ms for %.0f-%.0f files; runtime updates of shared containers %d; "
          "containerd p50 %.1f ms; end to end p50 %.1f p99 %.1f ms (%.2fx containerd's own); target %s\n",
          name.c_str(), kind, f.creates, f.inside_p50, f.inside_p99, f.inside_max, f.without_writes_p50,
          f.without_writes_p99, f.writes_p50, f.files_min, f.files_max, updates, f.containerd_p50, f.e2e_p50, f.e2e_p99,
          vs_direct, met ? "met" : "MISSED");
    }
    char line[1100];
    std::snprintf(line, sizeof line,
                  "{\"via\":\"%s\",\"kind\":\"%s\",\"tenants\":%d,\"cgroup\":\"%s\",\"partitions\":%s,\"creates\":%zu,"
                  "\"inside_ms_p50\":%.3f,\"inside_ms_p99\":%.3f,\"inside_ms_max\":%.3f,\"without_writes_ms_p50\":%.3f,"
                  "\"without_writes_ms_p99\":%.3f,\"vrid_writes_ms_p50\":%.3f,\"cgroup_files_min\":%.0f,"
                  "\"cgroup_files_max\":%.0f,\"runtime_updates\":%d,\"containerd_ms_p50\":%.1f,"
                  "\"end_to_end_ms_p50\":%.1f,\"end_to_end_ms_p99\":%.1f,\"end_to_end_vs_direct\":%.2f,"
                  "\"synchronize_ms\":%.3f,\"partitions_at_start\":%d,\"start_cgroup_files_min\":%.0f,"
                  "\"start_cgroup_files_max\":%.0f,\"starts_with_writes\":%zu,\"target_met\":%s}",
                  via.c_str(), kind, direct ? 0 : tenants, layout.v2 ? "v2" : "v1", partitions ? "true" : "false",
                  f.creates, f.inside_p50, f.inside_p99, f.inside_max, f.without_writes_p50, f.without_writes_p99,
                  f.writes_p50, f.files_min, f.files_max, updates, f.containerd_p50, f.e2e_p50, f.e2e_p99, vs_direct,
                  sync_ms, std::string(kind) == "exclusive" && partitions ? partitions_at_start : -1, start_min,
                  start_max, start_files.size(), direct ? "null" : (met ? "true" : "false"));
    json.push_back(line);
  }
  for (const pid_t qemu : qemus) {
    kill(qemu, SIGKILL);
    waitpid(qemu, nullptr, 0);
  }
  vri::bench::removeCgroupRoot(layout.root);
  if (layout.v2) vri::bench::removeCgroupRoot("kubepods");  // the run's own: refused above when it was there
  if (status != 0 || std::getenv("VRI_BENCH_KEEP") != nullptr) {
    std::fprintf(stderr, "cri_create_scale: %s: %s; logs in %s\n", name.c_str(), status != 0 ? "failed" : "done",
                 dir.c_str());
  } else {
    std::filesystem::remove_all(dir);
  }
  if (status != 0) json.clear();
  return json;
}

std::vector<int> numbers(const std::string& list) {
  std::vector<int> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::string> ways = {"shim"};
  bool containerdGiven = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](size_t n) { return arg.substr(n); };
    if (arg.starts_with("--containerd=")) {
      o.containerd = value(13);
      containerdGiven = true;
    } else if (arg.starts_with("--nri-socket=")) {
      o.nriSocket = value(13);
    } else if (arg.starts_with("--vrid=")) {
      o.vrid = value(7);
    } else if (arg.starts_with("--shim=")) {
      o.shim = value(7);
    } else if (arg.starts_with("--plugin=")) {
      o.plugin = value(9);
    } else if (arg.starts_with("--tenants=")) {
      o.tenants = numbers(value(10));
    } else if (arg.starts_with("--shared=")) {
      o.shared = std::stoi(value(9));
    } else if (arg == "--back-to-back") {
      o.settled = false;
    } else if (arg.starts_with("--exclusive=")) {
      o.exclusive = std::stoi(value(12));
    } else if (arg == "--partitions=auto" || arg == "--partitions=on" || arg == "--partitions=off") {
      o.partitions = value(13);
    } else if (arg.starts_with("--vrid-timeout-ms=")) {
      o.vridTimeoutMs = value(18);
    } else if (arg == "--print-windows") {
      o.printWindows = true;
    } else if (arg.starts_with("--via=")) {
      ways.clear();
      std::istringstream in(value(6));
      for (std::string way; std::getline(in, way, ',');) ways.push_back(way);
    } else {
      ways = {"?"};
    }
    if (std::any_of(ways.begin(), ways.end(),
                    [](const std::string& w) { return w != "direct" && w != "shim" && w != "nri"; })) {
      std::fprintf(stderr,
                   "usage: cri_create_scale [--tenants=N[,N...]] [--shared=N] [--exclusive=N] [--back-to-back] "
                   "[--via=direct|shim|nri[,...]] [--partitions=auto|on|off] [--vrid-timeout-ms=N] [--print-windows] "
                   "[--containerd=SOCK] [--nri-socket=SOCK] [--vrid=BINARY] [--shim=BINARY] [--plugin=BINARY]\n");
      return 2;
    }
  }
  // NRI is containerd 2's: every way runs against it, side by side.
  if (!containerdGiven && std::find(ways.begin(), ways.end(), "nri") != ways.end())
    o.containerd = "/var/tmp/vri-containerd2/run/containerd.sock";
  // containerd's own creates first: the other ways' lines are compared with them.
  std::stable_partition(ways.begin(), ways.end(), [](const std::string& w) { return w == "direct"; });
  std::vector<std::string> json;
  int status = 0;
  Baseline baseline;
  for (const std::string& via : ways) {
    for (const int tenants : via == "direct" ? std::vector<int>{0} : o.tenants) {
      const std::vector<std::string> lines = measure(o, via, tenants, baseline);
      if (lines.empty()) status = 1;
      json.insert(json.end(), lines.begin(), lines.end());
    }
  }
  for (const std::string& line : json) std::printf("%s\n", line.c_str());
  return status;
}
