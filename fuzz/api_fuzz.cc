// vrid's API as its clients reach it: raw bytes sent on its admin socket, which vrid decodes
// itself. One input is a sequence of calls (up to 8), each `method byte, length (2 bytes, little
// endian), request bytes`; the leading byte of the input is unused. Every input gets a vrid of its
// own, started on a fresh sqlite ledger and a fresh cgroupfs fixture (v1, 8 CPUs, 2 nodes), with a
// QEMU process of VM kVmUuid (pid kQemuPid) started once vrid runs, and stopped after it, so that
// any finding reproduces from its input alone.
//
// What vrid promises, checked after every call: it answers (a reply, or a status with a reason);
// the ledger and the cgroups agree (a dry-run Reconcile finds no value or cgroup of the ledger's
// that the kernel lacks); a refused call that
// decides leaves the ledger and every cgroup file exactly as they were.
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "cgroup-model/fixture_cgroupfs.h"
#include "fuzz/fuzz_input.h"
#include "tests/support/directory_snapshot.h"
#include "tests/support/generic_call.h"
#include "vri/daemon.h"

using namespace vri;

namespace {

constexpr char kTopology[] = "synthetic:pack:1 numa:2(memory=8GiB) core:2 pu:2";  // CPUs 0-7, nodes 0-1
constexpr char kVmUuid[] = "7d7e0a2e-0000-4000-8000-000000000001";
constexpr char kQemuPid[] = "4242";
constexpr char kVmScope[] = "machine/qemu-1-guest.libvirt-qemu";

struct Method {
  const char* name;
  bool decides;
};
constexpr Method kMethods[] = {
    {"GetNode", false},         {"AdmitPod", true},   {"AdmitContainer", true}, {"ResizeContainer", true},
    {"ReleaseContainer", true}, {"ReleasePod", true}, {"AdmitVm", true},        {"ReserveVm", true},
    {"ResizeVm", true},         {"VmStarted", true},  {"ReleaseVm", true},      {"ListTenants", false},
    {"GetTenant", false},       {"Reconcile", true},  {"MoveVm", true},         {"ContainerStarted", true},
    {"HandBack", true},
};
constexpr size_t kMethodCount = sizeof kMethods / sizeof kMethods[0];

struct Call {
  const Method* method;
  std::string request;
};

std::vector<Call> callsOf(std::string_view text) {
  std::vector<Call> calls;
  while (text.size() >= 3 && calls.size() < 8) {
    const Method& method = kMethods[static_cast<uint8_t>(text[0]) % kMethodCount];
    const size_t length = static_cast<uint8_t>(text[1]) | static_cast<size_t>(static_cast<uint8_t>(text[2])) << 8;
    text.remove_prefix(3);
    const std::string_view request = text.substr(0, length);
    text.remove_prefix(request.size());
    calls.push_back({&method, std::string(request)});
  }
  return calls;
}

// A directory of the input's own, on tmpfs when there is one: sqlite's fsyncs are the cost here.
std::string freshDirectory() {
  std::string pattern = (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + std::string("/vri-api-fuzz-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  return pattern;
}

// The fixture: cgroup v1's hierarchies and their mountinfo.
FixtureCgroupFs makeFixture(const std::string& dir) {
  FixtureCgroupFs fs =
      std::move(FixtureCgroupFs::createV1(dir + "/fx", *CpuSet::parse("0-7"), *CpuSet::parse("0-1")).value());
  std::string mountinfo = "30 1 0:27 / " + dir + "/fx/cgroup rw - tmpfs tmpfs rw\n";
  int id = 40;
  for (const char* h : {"cpuset", "cpu,cpuacct", "memory", "hugetlb", "pids"}) {
    mountinfo += std::to_string(id) + " 30 0:" + std::to_string(id) + " / " + dir + "/fx/cgroup/" + h +
                 " rw - cgroup cgroup rw," + h + "\n";
    ++id;
  }
  VRI_FUZZ_CHECK(fs.setProcFile("self/mountinfo", mountinfo).ok());
  // libvirt's partition, as a host where VMs ran before has it.
  const CgroupPath machine = CgroupPath::parse(kVmScope)->parent();
  for (const std::string h : {"cpuset", "cpu,cpuacct"}) VRI_FUZZ_CHECK(fs.mkdir({h, machine}).ok());
  VRI_FUZZ_CHECK(fs.write({"cpuset", machine}, "cpuset.mems", "0-1").ok());
  VRI_FUZZ_CHECK(fs.write({"cpuset", machine}, "cpuset.cpus", "0-7").ok());
  return fs;
}

// A QEMU process of VM kVmUuid in its scope, as libvirt starts it once vrid runs: the VM its calls admit
// before VmStarted names the process.
void startQemu(FixtureCgroupFs& fs) {
  const CgroupPath scope = *CgroupPath::parse(kVmScope);
  for (const CgroupPath& group : {scope, *scope.child("emulator"), *scope.child("vcpu0"), *scope.child("vcpu1")}) {
    for (const std::string h : {"cpuset", "cpu,cpuacct"}) VRI_FUZZ_CHECK(fs.mkdir({h, group}).ok());
    VRI_FUZZ_CHECK(fs.write({"cpuset", group}, "cpuset.mems", "0-1").ok());
    VRI_FUZZ_CHECK(fs.write({"cpuset", group}, "cpuset.cpus", "0-7").ok());
  }
  VRI_FUZZ_CHECK(fs.write({"cpuset", *scope.child("emulator")}, "tasks", kQemuPid).ok());
  VRI_FUZZ_CHECK(
      fs.setProcFile(std::string(kQemuPid) + "/cgroup",
                     "4:cpuset:/" + std::string(kVmScope) + "/emulator\n3:cpu,cpuacct:/" + kVmScope + "/emulator\n")
          .ok());
  using namespace std::string_literals;
  VRI_FUZZ_CHECK(
      fs.setProcFile(std::string(kQemuPid) + "/cmdline", "/usr/bin/qemu-system-x86_64\0-uuid\0"s + kVmUuid + "\0"s)
          .ok());
}

DaemonConfig configIn(const std::string& dir) {
  DaemonConfig config = defaultConfig();
  config.cgroupRoot = dir + "/fx/cgroup";
  config.topology = kTopology;
  config.stateDir = dir + "/state";
  config.kubeletRootDir = dir + "/kubelet";  // absent: HandBack finds no kubelet to hand back to
  config.socket = dir + "/run/vri.sock";
  config.adminSocket = dir + "/run/admin.sock";
  config.layout.libvirt = LibvirtLayout::kNoSystemd;
  config.layout.machinePartition = *CgroupPath::parse("machine");
  config.layout.ownership = Ownership::kEverything;
  config.vmMemoryOverheadBytes = 0;
  config.reconcileIntervalSeconds = 0;  // only the input's own calls change anything
  config.libvirtUri = "";
  return config;
}

struct Answer {
  grpc::Status status;
  std::string reply;
};

Answer call(grpc::GenericStub& stub, const std::string& method, const std::string& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  testing::GenericCall call(stub, context, "/vri.v1.Vri/" + method, {request});
  VRI_FUZZ_CHECK(call.wait(std::chrono::seconds(30)));
  return {call.status, call.replies.empty() ? "" : call.replies.front()};
}

// What the ledger holds, as the API lists it.
std::string ledgerView(grpc::GenericStub& stub) {
  v1::ListTenantsRequest request;
  request.set_kind(v1::ListTenantsRequest::ALL);
  const Answer listed = call(stub, "ListTenants", request.SerializeAsString());
  VRI_FUZZ_CHECK(listed.status.ok());
  return listed.reply;
}

std::vector<std::string> drift(grpc::GenericStub& stub) {
  v1::ReconcileRequest request;
  request.set_dry_run(true);
  const Answer answer = call(stub, "Reconcile", request.SerializeAsString());
  VRI_FUZZ_CHECK(answer.status.ok());
  v1::ReconcileReply reply;
  VRI_FUZZ_CHECK(reply.ParseFromString(answer.reply));
  std::vector<std::string> out(reply.drift().begin(), reply.drift().end());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  const std::vector<Call> calls = callsOf(in.text);
  if (calls.empty()) return 0;

  const std::string dir = freshDirectory();
  {
    FixtureCgroupFs fs = makeFixture(dir);
    std::FILE* devNull = std::fopen("/dev/null", "w");
    Logger log(LogLevel::kError, devNull);
    auto daemon = Daemon::start(configIn(dir), fs, log);
    if (!daemon.ok()) std::fprintf(stderr, "vrid did not start: %s\n", daemon.error().message().c_str());
    VRI_FUZZ_CHECK(daemon.ok());
    grpc::GenericStub stub(grpc::CreateChannel("unix:" + dir + "/run/admin.sock", grpc::InsecureChannelCredentials()));

    // A value or a cgroup the ledger holds that the kernel does not: none, ever. (A cgroup the
    // ledger does not hold is no disagreement: the QEMU scope before VmStarted, a VM's scope after
    // ReleaseVm while the fixture's process lives on.)
    const auto ledgerAndCgroupsAgree = [&] {
      for (const std::string& line : drift(stub)) {
        if (line.ends_with(" is not known to VRI")) continue;
        std::fprintf(stderr, "drift: %s\n", line.c_str());
        return false;
      }
      return true;
    };
    VRI_FUZZ_CHECK(ledgerAndCgroupsAgree());
    startQemu(fs);
    VRI_FUZZ_CHECK(ledgerAndCgroupsAgree());
    for (const Call& c : calls) {
      const std::string ledgerBefore = ledgerView(stub);
      const auto filesBefore = testing::snapshotFiles(dir + "/fx/cgroup");
      const Answer answer = call(stub, c.method->name, c.request);
      if (!answer.status.ok()) {
        VRI_FUZZ_CHECK(!answer.status.error_message().empty());
        if (c.method->decides) {
          VRI_FUZZ_CHECK(ledgerView(stub) == ledgerBefore);
          VRI_FUZZ_CHECK(testing::snapshotFiles(dir + "/fx/cgroup") == filesBefore);
        }
      }
      VRI_FUZZ_CHECK(ledgerAndCgroupsAgree());
    }
    (*daemon)->shutdown(std::chrono::seconds(2));
    daemon->reset();
    std::fclose(devNull);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
