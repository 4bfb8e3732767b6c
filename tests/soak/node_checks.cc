#include "tests/soak/node_checks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "base/cpuset.h"
#include "tools/cri-client/cri_client.h"

namespace vri::soak {
namespace {

namespace cri = ::runtime::v1;
using testing::readFile;
using testing::trimmed;
using Kind = Violation::Kind;

constexpr char kDomainPrefix[] = "vri-test-soak-";

// What one look at the node found: each side's view, by tenant.
struct NodeView {
  bool ledgerRead = false;
  std::map<std::string, v1::VmInfo> ledgerVms;           // by name
  std::set<std::string> ledgerReserved;                  // VMs held for their definition only, by name
  std::map<std::string, v1::PodInfo> ledgerPods;         // by uid
  std::set<std::string> runningDomains;                  // libvirt's, of this soak
  std::set<std::string> definedDomains;                  // defined and not running
  std::map<std::string, std::string> domainPins;         // name -> vCPU 0's affinity (virsh vcpupin)
  std::map<std::string, std::string> readySandboxes;     // uid -> sandbox id (containerd's, of this soak)
  std::map<std::string, std::string> runningContainers;  // uid -> container id
  std::set<std::string> liveIds;                         // every sandbox and container containerd has
};

std::string vcpu0Affinity(const std::string& name, const std::string& scratch) {
  std::string out;
  if (testing::virsh({"vcpupin", name}, scratch, &out) != 0) return "<virsh failed>";
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string id, cpus;
    if (words >> id >> cpus && id == "0") return cpus;
  }
  return "<no vCPU 0>";
}

NodeView look(SoakNode& node) {
  NodeView view;
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::TenantList list;
    view.ledgerRead = node.vri().ListTenants(&context, v1::ListTenantsRequest(), &list).ok();
    for (const v1::Tenant& tenant : list.tenants()) {
      if (tenant.has_vm() && !tenant.vm().reserved_only()) view.ledgerVms[tenant.vm().name()] = tenant.vm();
      if (tenant.has_vm() && tenant.vm().reserved_only()) view.ledgerReserved.insert(tenant.vm().name());
      if (tenant.has_pod()) view.ledgerPods[tenant.pod().uid()] = tenant.pod();
    }
  }
  const std::string scratch = node.tmp().sub("checks-virsh.out");
  std::string names;
  testing::virsh({"list", "--name"}, scratch, &names);
  std::istringstream lines(names);
  for (std::string name; std::getline(lines, name);) {
    if (!name.starts_with(kDomainPrefix)) continue;
    view.runningDomains.insert(name);
    view.domainPins[name] = vcpu0Affinity(name, scratch);
  }
  std::string inactive;
  testing::virsh({"list", "--inactive", "--name"}, scratch, &inactive);
  std::istringstream inactiveLines(inactive);
  for (std::string name; std::getline(inactiveLines, name);)
    if (name.starts_with(kDomainPrefix)) view.definedDomains.insert(name);
  cri_client::CriClient containerd(kContainerdSocket);
  cri::ListPodSandboxResponse sandboxes;
  containerd.listPodSandboxes(&sandboxes);
  for (const cri::PodSandbox& sandbox : sandboxes.items()) {
    view.liveIds.insert(sandbox.id());
    if (sandbox.state() == cri::SANDBOX_READY && sandbox.metadata().name() == kPodName)
      view.readySandboxes[sandbox.metadata().uid()] = sandbox.id();
  }
  cri::ListContainersResponse containers;
  containerd.listContainers("", &containers);
  for (const cri::Container& container : containers.containers()) {
    view.liveIds.insert(container.id());
    const auto uid = container.labels().find("io.kubernetes.pod.uid");
    if (container.state() == cri::CONTAINER_RUNNING && uid != container.labels().end() &&
        view.readySandboxes.contains(uid->second))
      view.runningContainers[uid->second] = container.id();
  }
  return view;
}

template <typename Map>
std::set<std::string> keys(const Map& map) {
  std::set<std::string> out;
  for (const auto& [key, value] : map) out.insert(key);
  return out;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
  return out.empty() ? "none" : out;
}

// The ledger's exclusive CPUs, each with its holder; a CPU claimed twice is a violation.
std::map<int, std::string> exclusiveHolders(const NodeView& view, std::vector<Violation>& violations) {
  std::map<int, std::string> holders;
  const auto claim = [&](const std::string& cpus, const std::string& who) {
    const Result<CpuSet> set = CpuSet::parse(cpus);
    if (!set.ok())
      return violations.push_back({Kind::kDisagreement, who + ": exclusive CPUs '" + cpus + "' do not parse"});
    for (int cpu : *set) {
      const auto [at, fresh] = holders.emplace(cpu, who);
      if (!fresh)
        violations.push_back(
            {Kind::kCpuTwice, "CPU " + std::to_string(cpu) + " held by " + at->second + " and " + who});
    }
  };
  for (const auto& [name, vm] : view.ledgerVms) claim(vm.allocation().exclusive_cpus(), "vm/" + name);
  for (const auto& [uid, pod] : view.ledgerPods)
    for (const v1::ContainerInfo& container : pod.containers())
      claim(container.exclusive_cpus(), "pod/" + uid + "/" + container.allocation().name());
  return holders;
}

// A kernel placement must not reach a CPU another tenant holds exclusively.
void checkKernelPlacement(const std::string& who, const std::string& cpus, const std::map<int, std::string>& holders,
                          std::vector<Violation>& violations) {
  const Result<CpuSet> set = CpuSet::parse(cpus);
  if (!set.ok()) return violations.push_back({Kind::kDisagreement, who + ": kernel CPUs '" + cpus + "' do not parse"});
  for (int cpu : *set) {
    const auto holder = holders.find(cpu);
    if (holder != holders.end() && holder->second != who)
      violations.push_back(
          {Kind::kCpuTwice, who + " runs on CPU " + std::to_string(cpu) + ", which " + holder->second + " holds"});
  }
}

// QEMUs of this soak's domains that libvirt does not run.
void checkQemuProcesses(const NodeView& view, std::vector<Violation>& violations) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (!std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    std::string cmdline = readFile("/proc/" + pid + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    const size_t at = cmdline.find(std::string("guest=") + kDomainPrefix);
    if (!cmdline.starts_with("/usr/bin/qemu-system") || at == std::string::npos) continue;
    const std::string name = cmdline.substr(at + 6, cmdline.find_first_of(", ", at) - at - 6);
    if (!view.runningDomains.contains(name))
      violations.push_back({Kind::kLeak, "QEMU " + pid + " of " + name + " runs, and libvirt does not run it"});
  }
}

// Processes in the pods' cgroups that belong to no sandbox or container containerd has.
void checkPodProcesses(SoakNode& node, const NodeView& view, std::vector<Violation>& violations) {
  const std::filesystem::path root = "/sys/fs/cgroup/cpuset/" + node.kubeletRoot();
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory()) continue;
    const std::string procs = trimmed(readFile(it->path() / "cgroup.procs"));
    if (procs.empty()) continue;
    const std::string id = it->path().filename();
    if (!view.liveIds.contains(id))
      violations.push_back(
          {Kind::kLeak, "processes " + procs + " left in " + it->path().string() + ", which containerd does not run"});
  }
}

void checkCgroupTree(SoakNode& node, std::vector<Violation>& violations) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::GetTreeRequest request;
  request.set_compare_kernel(true);
  v1::CgroupTree tree;
  const grpc::Status status = node.vri().GetTree(&context, request, &tree);
  if (!status.ok()) return violations.push_back({Kind::kDisagreement, "GetTree: " + status.error_message()});
  for (const std::string& unknown : tree.unknown())
    violations.push_back({Kind::kLeak, "cgroup " + unknown + " below VRI's roots, not in the ledger"});
  for (const v1::CgroupNode& cgroup : tree.cgroups()) {
    if (cgroup.missing() && !cgroup.tenant().empty())
      violations.push_back({Kind::kDisagreement, "cgroup " + cgroup.path() + " of " + cgroup.tenant() + " missing"});
    for (const v1::FileDrift& drift : cgroup.drift())
      violations.push_back({Kind::kDisagreement, cgroup.path() + "/" + drift.file() + " holds '" + drift.kernel() +
                                                     "', VRI wants '" + drift.wanted() + "'"});
  }
}

std::vector<Violation> violationsNow(SoakNode& node, const NodeTenants& tenants) {
  std::vector<Violation> violations;
  const NodeView view = look(node);
  if (!view.ledgerRead) return {{Kind::kDisagreement, "vrid does not answer ListTenants"}};

  // The ledger against libvirt and containerd: the same tenants, and every acknowledged one.
  if (keys(view.ledgerVms) != view.runningDomains)
    violations.push_back({Kind::kDisagreement, "ledger VMs " + joined(keys(view.ledgerVms)) + ", libvirt runs " +
                                                   joined(view.runningDomains)});
  // A reservation outlives no definition (a VM defined but not running may hold none: vrid had no room
  // for it, or could not record it when it was defined).
  std::set<std::string> staleReservations;
  std::set_difference(view.ledgerReserved.begin(), view.ledgerReserved.end(), view.definedDomains.begin(),
                      view.definedDomains.end(), std::inserter(staleReservations, staleReservations.end()));
  if (!staleReservations.empty())
    violations.push_back(
        {Kind::kLeak, "ledger reservations of VMs libvirt does not define: " + joined(staleReservations)});
  if (keys(view.ledgerPods) != keys(view.readySandboxes))
    violations.push_back({Kind::kDisagreement, "ledger pods " + joined(keys(view.ledgerPods)) +
                                                   ", containerd's ready sandboxes " +
                                                   joined(keys(view.readySandboxes))});
  for (const SoakVm& vm : tenants.vms())
    if (vm.acked && !view.ledgerVms.contains(vm.name))
      violations.push_back({Kind::kLost, "acknowledged VM " + vm.name + " is not in the ledger"});
  for (const SoakPod& pod : tenants.pods())
    if (pod.acked && (!view.ledgerPods.contains(pod.uid) || !view.runningContainers.contains(pod.uid)))
      violations.push_back({Kind::kLost, "acknowledged pod " + pod.uid + " is not in the ledger or not running"});

  // No CPU twice, in the ledger and in the kernel; each side's placement as the ledger has it.
  const std::map<int, std::string> holders = exclusiveHolders(view, violations);
  for (const auto& [name, pins] : view.domainPins) {
    checkKernelPlacement("vm/" + name, pins, holders, violations);
    const auto vm = view.ledgerVms.find(name);
    if (vm == view.ledgerVms.end() || vm->second.allocation().vcpu_cpus_size() == 0) continue;
    const int cpu = vm->second.allocation().vcpu_cpus(0);
    const std::string wanted = cpu >= 0 ? std::to_string(cpu) : vm->second.allocation().shared_cpus();
    if (pins != wanted)
      violations.push_back({Kind::kDisagreement, "vm/" + name + ": virsh vcpupin says " + pins + ", ledger " + wanted});
  }
  cri_client::CriClient containerd(kContainerdSocket);
  for (const SoakPod& pod : tenants.pods()) {
    const auto running = view.runningContainers.find(pod.uid);
    const auto ledger = view.ledgerPods.find(pod.uid);
    if (running == view.runningContainers.end() || ledger == view.ledgerPods.end() ||
        ledger->second.containers_size() != 1)
      continue;
    const std::string who = "pod/" + pod.uid + "/app";
    const std::string kernel =
        trimmed(readFile("/sys/fs/cgroup/cpuset" + pod.parent + "/" + running->second + "/cpuset.cpus"));
    checkKernelPlacement(who, kernel, holders, violations);
    cri::ContainerStatusResponse status;
    const std::string inContainerd =
        containerd.status(running->second, &status).ok() ? status.status().resources().linux().cpuset_cpus() : "?";
    const std::string wanted = ledger->second.containers(0).cpuset_cpus();
    if (kernel != wanted || inContainerd != wanted)
      violations.push_back(
          {Kind::kDisagreement, who + ": kernel " + kernel + ", containerd " + inContainerd + ", ledger " + wanted});
  }

  checkQemuProcesses(view, violations);
  checkPodProcesses(node, view, violations);
  checkCgroupTree(node, violations);
  return violations;
}

}  // namespace

std::string_view kindName(Violation::Kind kind) {
  switch (kind) {
    case Kind::kCpuTwice: return "cpu-twice";
    case Kind::kLost: return "lost";
    case Kind::kDisagreement: return "disagreement";
    case Kind::kLeak: return "leak";
  }
  return "?";
}

std::vector<Violation> checkNode(SoakNode& node, NodeTenants& tenants, std::chrono::seconds settle) {
  // Agreement is asked of the node after its next reconcile. One runs before each look: a tenant gone
  // from the node is released by the first reconcile after vrid's release grace, and the shim's and
  // libvirt's sides follow a change within the settling time.
  const auto until = std::chrono::steady_clock::now() + settle;
  for (;;) {
    tenants.retryRemovals();
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::ReconcileReply reply;
    const grpc::Status reconciled = node.vri().Reconcile(&context, v1::ReconcileRequest(), &reply);
    std::vector<Violation> violations =
        reconciled.ok()
            ? violationsNow(node, tenants)
            : std::vector<Violation>{{Kind::kDisagreement, "vrid does not reconcile: " + reconciled.error_message()}};
    if (violations.empty() || std::chrono::steady_clock::now() >= until) return violations;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace vri::soak
