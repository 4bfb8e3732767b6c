// vrid's cpuset partition mode on a real Linux 6.12 node laid out as kubelet's systemd driver lays it
// out (the `partitions` suite runs it as root, after its kernel steps): shared pods are scopes with a
// sleeping process each, made by systemd-run as runc makes them, and vrid runs in this process with
// cpuset_partitions = on and systemd_units = on. It checks what the suite's kernel steps found, now
// through vrid: the files a grant writes (the same with 100 shared pods as with none), a shared
// process losing the CPU with no write to its cgroup, the partition states, a sibling write that
// invalidates a partition repaired by reconcile, daemon-reload, and the release.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "base/text.h"
#include "cgroup-model/kernel_cgroupfs.h"
#include "systemd/sd_bus_units.h"
#include "tests/support/systemd_scope.h"
#include "tests/support/temp_dir.h"
#include "vri/daemon.h"

namespace vri::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// The kernel's cgroupfs, with each write recorded as "<cgroup>/<file>".
class RecordingCgroupFs : public CgroupFs {
 public:
  explicit RecordingCgroupFs(CgroupFs& inner) : inner_(inner) {}
  Result<std::string> read(const CgroupDir& d, std::string_view f) const override { return inner_.read(d, f); }
  Result<void> write(const CgroupDir& d, std::string_view f, std::string_view v) override {
    written.push_back(d.path.str() + "/" + std::string(f));
    return inner_.write(d, f, v);
  }
  Result<void> mkdir(const CgroupDir& d) override { return inner_.mkdir(d); }
  Result<void> rmdir(const CgroupDir& d) override { return inner_.rmdir(d); }
  bool exists(const CgroupDir& d) const override { return inner_.exists(d); }
  Result<std::vector<std::string>> children(const CgroupDir& d) const override { return inner_.children(d); }
  Result<std::string> readProc(std::string_view r) const override { return inner_.readProc(r); }
  std::vector<std::string> written;

 private:
  CgroupFs& inner_;
};

std::string uid(int n) {
  char text[64];
  std::snprintf(text, sizeof text, "9d%06d-0000-4000-8000-000000000000", n);
  return text;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::string(trimmed(text));
}

std::string allCpus() { return CpuSet::range(0, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) - 1).format(); }

std::string allowedCpus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Cpus_allowed_list:")) return std::string(trimmed(line.substr(18)));
  }
  return "?";
}

std::string vmUuid(int n) {
  char text[64];
  std::snprintf(text, sizeof text, "9e%06d-0000-4000-8000-000000000000", n);
  return text;
}

// A node with `sharedPods` BestEffort pods (a scope each), `sharedVms` shared VMs (machined's scopes,
// libvirt's thread groups, a sleeping process for QEMU) and vrid over it.
class Node {
 public:
  explicit Node(int sharedPods, int sharedVms = 0) {
    kernel_ = std::make_unique<KernelCgroupFs>(std::move(KernelCgroupFs::create("/sys/fs/cgroup")).value());
    recording_ = std::make_unique<RecordingCgroupFs>(*kernel_);
    bus_ = std::move(SdBusUnits::connect(std::chrono::milliseconds(5000))).value();
    for (int n = 0; n < sharedPods; ++n) {
      const CgroupPath pod = *namer_->pod(QosClass::kBestEffort, uid(n));
      auto pid = startScope("cri-containerd-s" + std::to_string(n) + ".scope", pod.leaf(), false);
      EXPECT_TRUE(pid.ok()) << pid.error().message();
      if (pid.ok()) shared_.push_back(*pid);
    }
    DaemonConfig config = defaultConfig();
    config.cgroupRoot = "/sys/fs/cgroup";
    config.topology = "live";
    config.reservedCpus.count = 0;
    config.sharedVcpuMilli = 1;        // the VMs' demand on the pool negligible: 100 pods and 10 VMs on 4 CPUs
    config.vmMemoryOverheadBytes = 0;  // and on the guest's memory
    config.stateDir = tmp_.sub("state");
    config.socket = tmp_.sub("state/ro.sock");
    config.adminSocket = tmp_.sub("state/admin.sock");
    config.libvirtUri = "";
    config.reconcileIntervalSeconds = 0;
    config.logLevel = LogLevel::kError;
    config.layout.driver = KubeletDriver::kSystemd;
    config.layout.libvirt = LibvirtLayout::kSystemdWithLibvirtLevel;
    config.layout.machinePartition = *CgroupPath::parse("machine.slice");
    config.layout.ownership = Ownership::kCpusetsAndMachine;
    config.systemdUnits = SystemdUnitsMode::kOn;
    config.cpusetPartitions = CpusetPartitionsMode::kOn;
    auto daemon = Daemon::start(config, *recording_, log_, nullptr, steadyClock(), bus_.get());
    EXPECT_TRUE(daemon.ok()) << daemon.error().message();
    if (daemon.ok()) daemon_ = std::move(*daemon);
    if (daemon_) startVms(sharedVms);
  }
  ~Node() {
    if (daemon_) daemon_->shutdown(std::chrono::seconds(1));
    daemon_.reset();
    stopScopes(shared_);
    stopScopes(containers_);
    stopScopes(vms_);
  }

  NodeManager& node() { return daemon_->node(); }
  bool started() const { return daemon_ != nullptr; }
  pid_t sharedProcess() const { return shared_.empty() ? -1 : shared_.front(); }
  pid_t vmProcess() const { return vms_.empty() ? -1 : vms_.front(); }

  // A container's scope in the pod's slice, as runc makes it from a request for every CPU before vrid
  // narrows it.
  std::string makeContainer(const std::string& podUid, QosClass qos, const std::string& id) {
    const CgroupPath pod = *namer_->pod(qos, podUid);
    auto pid = startScope("cri-containerd-" + id + ".scope", pod.leaf(), false, allCpus());
    EXPECT_TRUE(pid.ok()) << pid.error().message();
    if (pid.ok()) containers_.push_back(*pid);
    return "/sys/fs/cgroup/" + namer_->container(qos, podUid, id)->str();
  }

  // The files a call wrote, in order.
  template <typename F>
  std::vector<std::string> writesOf(F call) {
    recording_->written.clear();
    call();
    return recording_->written;
  }

 private:
  // Shared VMs, as the bench makes them: admitted, then started in their scopes.
  void startVms(int count) {
    for (int n = 0; n < count; ++n) {
      auto pid = startVmScope(*kernel_, "machine-qemu\\x2d" + std::to_string(n + 1) + "\\x2dvm.scope");
      ASSERT_TRUE(pid.ok()) << pid.error().message();
      vms_.push_back(*pid);
      VmSpec vm;
      vm.uuid = vmUuid(n);
      vm.cpu.name = "vm" + std::to_string(n);
      vm.cpu.vcpus = 1;
      vm.memoryBytes = 2 << 20;
      vm.cpu.cpuPolicy = VmCpuPolicy::kShared;
      auto admitted = node().admitVm(vm);
      ASSERT_TRUE(admitted.ok()) << admitted.error().message();
      auto started = node().vmStarted(vm.uuid, *pid);
      ASSERT_TRUE(started.ok()) << started.error().message();
    }
  }

  TempDir tmp_;
  std::unique_ptr<KernelCgroupFs> kernel_;
  std::unique_ptr<RecordingCgroupFs> recording_;
  std::unique_ptr<SdBusUnits> bus_;
  std::unique_ptr<KubeletNamer> namer_ = makeKubeletNamer(KubeletDriver::kSystemd);
  Logger log_{LogLevel::kError};
  std::vector<pid_t> shared_, containers_, vms_;
  std::unique_ptr<Daemon> daemon_;
};

// A Guaranteed pod of its own for each node (a pod's slice outlives its last scope).
PodSpec guaranteed(int n) { return {uid(900 + n), "default/g" + std::to_string(n), QosClass::kGuaranteed, 0, 0}; }
const ContainerSpec kTwoCpus{"app", "g1", false, 2000, 2000, 64 << 20, std::nullopt};

// Every cgroup's cpuset partition files below the root, two levels of kubepods.slice deep.
std::string partitionFiles() {
  std::string out;
  const std::string root = "/sys/fs/cgroup";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_directory() || entry.path().string().find("kubepods-besteffort-pod") != std::string::npos) continue;
    const std::string dir = entry.path().string();
    const std::string exclusive = read(dir + "/cpuset.cpus.exclusive");
    const std::string effective = read(dir + "/cpuset.cpus.exclusive.effective");
    const std::string partition = read(dir + "/cpuset.cpus.partition");
    if (exclusive.empty() && effective.empty() && (partition.empty() || partition == "member")) continue;
    out +=
        "\n  " + dir.substr(root.size()) + ": exclusive " + exclusive + ", effective " + effective + ", " + partition;
  }
  return out;
}

// Fails the test with the call's error when it has one, and the partition files then.
template <typename T>
void expectOk(const Result<T>& result, const char* what) {
  EXPECT_TRUE(result.ok()) << what << ": " << (result.ok() ? "" : result.error().message()) << partitionFiles();
}

std::string print(const std::vector<std::string>& files) {
  std::string out;
  for (const std::string& f : files) out += "\n  " + f;
  return out;
}

TEST(PartitionsVridTest, AGrantWritesTheSameFilesWith110SharedTenantsAsWithNone) {
  std::vector<std::string> grant_alone, release_alone;
  // The files written, with the pod's UID as "<pod>": each node has a pod of its own. machine.slice's
  // weight is left out and counted: once VMs run, a pod's request moves the pod/VM balance, one value
  // however many tenants (written when it changes, not with every tenant).
  int weights = 0;
  const auto named = [&weights](std::vector<std::string> files, const PodSpec& pod) {
    std::string underscored = pod.uid;
    std::replace(underscored.begin(), underscored.end(), '-', '_');
    std::vector<std::string> out;
    for (std::string& f : files) {
      if (const size_t at = f.find(underscored); at != std::string::npos) f.replace(at, underscored.size(), "<pod>");
      if (f == "machine.slice/cpu.weight") {
        ++weights;
        continue;
      }
      out.push_back(f);
    }
    return out;
  };
  {
    Node empty(0);
    ASSERT_TRUE(empty.started());
    const PodSpec pod = guaranteed(0);
    empty.makeContainer(pod.uid, QosClass::kGuaranteed, "g1");
    grant_alone = named(empty.writesOf([&] { expectOk(empty.node().admitContainer(pod, kTwoCpus), "grant"); }), pod);
    release_alone = named(empty.writesOf([&] { expectOk(empty.node().releasePod(pod.uid), "release"); }), pod);
  }
  Node full(100, 10);
  ASSERT_TRUE(full.started());
  const PodSpec pod = guaranteed(1);
  const std::string container = full.makeContainer(pod.uid, QosClass::kGuaranteed, "g1");
  const pid_t shared = full.sharedProcess();
  const pid_t vm = full.vmProcess();
  const std::string before = allowedCpus(shared);
  const std::string vm_before = allowedCpus(vm);
  const std::vector<std::string> grant =
      named(full.writesOf([&] { expectOk(full.node().admitContainer(pod, kTwoCpus), "grant"); }), pod);
  std::cout << "grant, no shared tenant:" << print(grant_alone)
            << "\ngrant, 100 shared pods and 10 shared VMs:" << print(grant) << std::endl;
  EXPECT_EQ(grant, grant_alone);
  const std::string cpus = read(container + "/cpuset.cpus");
  EXPECT_EQ(read(container + "/cpuset.cpus.partition"), "root");
  EXPECT_EQ(read(container + "/cpuset.cpus.exclusive.effective"), cpus);
  EXPECT_EQ(read(container + "/cpuset.cpus.effective"), cpus);
  EXPECT_EQ(read("/sys/fs/cgroup/kubepods.slice/cpuset.cpus.exclusive"), cpus);
  // The shared process lost the CPUs, and nothing wrote its cgroup.
  const CpuSet granted = *CpuSet::parse(cpus);
  const CpuSet now_allowed = *CpuSet::parse(allowedCpus(shared));
  EXPECT_FALSE(now_allowed.intersects(granted)) << allowedCpus(shared) << " beside " << cpus;
  EXPECT_EQ(now_allowed | granted, *CpuSet::parse(before));
  // So did the shared VM's thread, its libvirt pins (the wide set) unchanged.
  const CpuSet vm_allowed = *CpuSet::parse(allowedCpus(vm));
  EXPECT_FALSE(vm_allowed.intersects(granted)) << allowedCpus(vm) << " beside " << cpus;
  EXPECT_EQ(vm_allowed | granted, *CpuSet::parse(vm_before));
  for (const std::string& file : grant) {
    EXPECT_THAT(file, Not(HasSubstr("besteffort")));
    EXPECT_THAT(file, Not(HasSubstr("machine-qemu")));
  }
  const std::vector<std::string> release =
      named(full.writesOf([&] { expectOk(full.node().releasePod(pod.uid), "release"); }), pod);
  std::cout << "release, no shared tenant:" << print(release_alone)
            << "\nrelease, 100 shared pods and 10 shared VMs:" << print(release) << std::endl;
  EXPECT_EQ(release, release_alone);
  std::cout << "machine.slice/cpu.weight written " << weights << " times in the four calls" << std::endl;
  EXPECT_LE(weights, 2) << "the weight once per call at most, and only beside VMs";
  EXPECT_EQ(read(container + "/cpuset.cpus.partition"), "member");
  EXPECT_EQ(allowedCpus(shared), before);
  EXPECT_EQ(allowedCpus(vm), vm_before);
}

TEST(PartitionsVridTest, ASiblingWriteInvalidatesThePartitionAndReconcileRepairsIt) {
  Node n(4);
  ASSERT_TRUE(n.started());
  const PodSpec pod = guaranteed(2);
  const std::string container = n.makeContainer(pod.uid, QosClass::kGuaranteed, "g1");
  const std::string sibling = n.makeContainer(pod.uid, QosClass::kGuaranteed, "side");
  ContainerSpec side{"side", "side", false, 500, 500, 64 << 20, std::nullopt};
  auto shared = n.node().admitContainer(pod, side);
  ASSERT_TRUE(shared.ok()) << shared.error().message();
  auto granted = n.node().admitContainer(pod, kTwoCpus);
  ASSERT_TRUE(granted.ok()) << granted.error().message() << partitionFiles();
  ASSERT_EQ(read(container + "/cpuset.cpus.partition"), "root");
  const std::string cpus = read(container + "/cpuset.cpus");
  EXPECT_FALSE(CpuSet::parse(read(sibling + "/cpuset.cpus"))->intersects(*CpuSet::parse(cpus)));
  // runc keeps each scope's AllowedCPUs at what the shim told it: VRI's values, the sibling's updated by the
  // shim's pool follower once g1 took its CPUs (a daemon-reload below rewrites the scopes from them).
  for (const std::string& scope : {sibling, container}) {
    const std::string unit = scope.substr(scope.rfind('/') + 1);
    const std::string cpus_now = read(scope + "/cpuset.cpus");
    ASSERT_EQ(std::system(("systemctl set-property --runtime " + unit + " AllowedCPUs=" + cpus_now).c_str()), 0);
  }
  EXPECT_EQ(read(container + "/cpuset.cpus.partition"), "root") << "set-property with its own CPUs";
  // As runc writes a sibling's cpuset from a wide request.
  { std::ofstream(sibling + "/cpuset.cpus") << allCpus() + "\n"; }
  const std::string broken = read(container + "/cpuset.cpus.partition");
  std::cout << "after the sibling's write: " << broken << std::endl;
  ASSERT_THAT(broken, HasSubstr("root invalid"));
  auto report = n.node().reconcile(false);
  ASSERT_TRUE(report.ok()) << report.error().message();
  for (const std::string& op : report->operations) std::cout << "  reconcile: " << op << std::endl;
  EXPECT_THAT(report->drift, Contains(HasSubstr("cpuset.cpus.partition is \"" + broken)));
  EXPECT_EQ(read(container + "/cpuset.cpus.partition"), "root");
  EXPECT_EQ(read(container + "/cpuset.cpus.effective"), cpus);
  // daemon-reload: systemd rewrites the units' cpusets from their properties, which hold VRI's values.
  std::cout << "before daemon-reload: side " << read(sibling + "/cpuset.cpus") << std::endl;
  ASSERT_EQ(std::system("systemctl daemon-reload"), 0);
  std::cout << "after daemon-reload: side " << read(sibling + "/cpuset.cpus") << ", g1 "
            << read(container + "/cpuset.cpus") << std::endl;
  EXPECT_EQ(read(container + "/cpuset.cpus.partition"), "root");
  auto after_reload = n.node().reconcile(true);
  ASSERT_TRUE(after_reload.ok()) << after_reload.error().message();
  std::string underscored = pod.uid;
  std::replace(underscored.begin(), underscored.end(), '-', '_');
  for (const std::string& drift : after_reload->drift) EXPECT_THAT(drift, Not(HasSubstr(underscored)));
}

}  // namespace
}  // namespace vri::testing
