// vrictl's every command against a real vrid (in this process, on the cgroupfs
// fixture, over real gRPC sockets), as its users see it: text, JSON, exit codes
// and errors, compared with golden files. The node: 64 CPUs on two NUMA nodes
// with pods of each QoS class and VMs of each policy; and 256 CPUs in 80 columns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/test_paths.h"
#include "tests/vri/vrid_api_fixture.h"
#include "tests/vri/vrid_process.h"
#include "tests/vrictl/golden_output.h"

namespace vri::testing {
namespace {

constexpr char kWebUid[] = "8a0b6c1e-1111-4000-8000-000000000001";
constexpr char kCartUid[] = "8a0b6c1e-2222-4000-8000-000000000002";
constexpr char kBatchUid[] = "8a0b6c1e-3333-4000-8000-000000000003";
constexpr char kDbUuid[] = "4f2c9a10-aaaa-4000-8000-000000000001";
constexpr char kBuilderUuid[] = "4f2c9a10-bbbb-4000-8000-000000000002";
constexpr char kSpareUuid[] = "4f2c9a10-cccc-4000-8000-000000000003";

// vrictl with `args`, its output (stdout and stderr) normalised, and its exit code.
struct Vrictl {
  const DaemonHarness& vrid;
  std::string run(const std::vector<std::string>& args, bool admin = false) const {
    std::vector<std::string> argv = {VRICTL_BINARY,
                                     "--socket=" + (admin ? vrid.config.adminSocket : vrid.config.socket)};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    const int code = runCommand(argv, &output, vrid.tmp().sub("vrictl.out"));
    return normalised(output, vrid.tmp().path()) + "[exit " + std::to_string(code) + "]\n";
  }
};

void admit(DaemonHarness& vrid, const v1::AdmitContainerRequest& request) {
  grpc::ClientContext context;
  v1::ContainerAllocation placed;
  const grpc::Status status = vrid.admin->AdmitContainer(&context, request, &placed);
  ASSERT_TRUE(status.ok()) << status.error_message();
}

void startVm(DaemonHarness& vrid, const v1::AdmitVmRequest& request, const std::string& scope, int pid) {
  grpc::ClientContext c1, c2;
  v1::VmAllocation placed;
  grpc::Status status = vrid.admin->AdmitVm(&c1, request, &placed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  vrid.fakeQemu(scope, pid, request.uuid(), request.vcpus());
  v1::VmStartedRequest started;
  started.set_uuid(request.uuid());
  started.set_qemu_pid(pid);
  v1::VmStartedReply where;
  status = vrid.admin->VmStarted(&c2, started, &where);
  ASSERT_TRUE(status.ok()) << status.error_message();
}

// Pods of each QoS class, a dedicated, a shared and a defined-only VM.
void populate(DaemonHarness& vrid) {
  auto web = container(kWebUid, v1::GUARANTEED, 4000, 4000, "c0ffee01", "app");
  web.set_pod_name("default/web");
  admit(vrid, web);
  auto cart = container(kCartUid, v1::BURSTABLE, 500, 2000, "c0ffee02", "cart");
  cart.set_pod_name("shop/cart");
  admit(vrid, cart);
  auto batch = container(kBatchUid, v1::BEST_EFFORT, 0, 0, "c0ffee03", "worker");
  batch.set_pod_name("jobs/batch");
  admit(vrid, batch);
  auto db = vm(kDbUuid, "db", 4, v1::DEDICATED);
  startVm(vrid, db, "machine/qemu-1-db.libvirt-qemu", 5001);
  startVm(vrid, vm(kBuilderUuid, "builder", 2, v1::SHARED), "machine/qemu-2-builder.libvirt-qemu", 5002);
  grpc::ClientContext context;
  v1::VmAllocation reserved;
  ASSERT_TRUE(vrid.admin->ReserveVm(&context, vm(kSpareUuid, "spare", 2, v1::DEDICATED), &reserved).ok());
}

class VrictlGoldenTest : public ::testing::Test {
 protected:
  VrictlGoldenTest() : vrid_("pack:1 numa:2(memory=32GiB) core:16 pu:2", "0-63", "0-1") {
    vrid_.config.reservations.systemReservedCpu = *Quantity::parse("2");
  }
  void SetUp() override {
    ASSERT_TRUE(vrid_.start());
    populate(vrid_);
  }
  DaemonHarness vrid_;
  Vrictl vrictl_{vrid_};
};

TEST_F(VrictlGoldenTest, EveryReadingCommandInTextAndJson) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"nodeinfo", {"nodeinfo"}},
      {"topology", {"topology"}},
      {"topology.json", {"topology", "--json"}},
      {"capacity", {"capacity"}},
      {"capacity.json", {"capacity", "--json"}},
      {"pool", {"pool"}},
      {"pool.json", {"--json", "pool"}},
      {"list", {"list"}},
      {"list-pods", {"list", "--pods"}},
      {"list-vms", {"list", "--vms"}},
      {"list.json", {"list", "--vms", "--json"}},
      {"dominfo-by-name", {"dominfo", "db"}},
      {"dominfo-by-uuid", {"dominfo", kBuilderUuid}},
      {"dominfo-reserved", {"dominfo", "spare"}},
      {"podinfo-by-name", {"podinfo", "default/web"}},
      {"podinfo-by-uid", {"podinfo", kCartUid}},
      {"podinfo.json", {"podinfo", "jobs/batch", "--json"}},
      {"map-64", {"map"}},
      {"map-64-colour", {"map", "--color=always"}},
      {"map-64.json", {"map", "--json"}},
      {"tree-64", {"tree"}},
      {"tree-64-not-compared", {"tree", "--no-compare"}},
      {"events", {"events", "--recent", "5"}},
      {"events.json", {"events", "--recent=2", "--json"}},
  };
  for (const auto& [golden, args] : commands) {
    SCOPED_TRACE(golden);
    EXPECT_TRUE(matchesGolden(golden + ".txt", vrictl_.run(args)));
  }
}

TEST_F(VrictlGoldenTest, RefusalsAndUsageErrorsHaveTheirExitCodes) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands = {
      {"error-unknown-vm", {"dominfo", "nosuch"}},      {"error-unknown-pod", {"podinfo", "default/nosuch"}},
      {"error-two-kinds", {"list", "--pods", "--vms"}}, {"error-unknown-command", {"frobnicate"}},
      {"error-missing-argument", {"dominfo"}},          {"error-recent-too-many", {"events", "--recent", "1000"}},
      {"error-reconcile-read-only", {"reconcile"}},
  };
  for (const auto& [golden, args] : commands) {
    SCOPED_TRACE(golden);
    EXPECT_TRUE(matchesGolden(golden + ".txt", vrictl_.run(args)));
  }
  const std::string unreachable = vrictl_.run({"--socket=" + vrid_.tmp().sub("run/none.sock"), "list"});
  EXPECT_THAT(unreachable, ::testing::HasSubstr("vrictl: cannot reach vrid at unix:<tmp>/run/none.sock"));
  EXPECT_THAT(unreachable, ::testing::EndsWith("[exit 1]\n"));
}

TEST_F(VrictlGoldenTest, EveryCommandHasHelp) {
  EXPECT_TRUE(matchesGolden("help.txt", vrictl_.run({"--help"})));
  for (const char* command : {"nodeinfo", "topology", "capacity", "pool", "list", "dominfo", "podinfo", "vcpupin",
                              "emulatorpin", "numatune", "tree", "map", "top", "events", "reconcile", "handback"}) {
    SCOPED_TRACE(command);
    EXPECT_TRUE(matchesGolden(std::string("help-") + command + ".txt", vrictl_.run({command, "--help"})));
  }
}

// A hand write behind VRI's back: tree marks it, reconcile --dry-run shows the repair and does nothing,
// reconcile on the admin socket repairs it, and tree then finds the kernel in agreement.
TEST_F(VrictlGoldenTest, TreeMarksDriftAndReconcileRepairsIt) {
  const std::string app = "kubepods/pod" + std::string(kWebUid) + "/c0ffee01";
  const auto held = vrid_.fs().read({"cpuset", *CgroupPath::parse(app)}, "cpuset.cpus");
  ASSERT_TRUE(held.ok());
  const std::string narrowed = std::to_string(CpuSet::parse(*held)->first());
  ASSERT_TRUE(vrid_.fs().write({"cpuset", *CgroupPath::parse(app)}, "cpuset.cpus", narrowed).ok());
  ASSERT_TRUE(vrid_.fs().write({"cpu,cpuacct", *CgroupPath::parse(app)}, "cpu.shares", "2").ok());
  EXPECT_TRUE(matchesGolden("tree-64-drift.txt", vrictl_.run({"tree"})));
  EXPECT_TRUE(matchesGolden("reconcile-dry-run.txt", vrictl_.run({"reconcile", "--dry-run"})));
  EXPECT_EQ(*vrid_.fs().read({"cpuset", *CgroupPath::parse(app)}, "cpuset.cpus"),
            narrowed);  // a dry run writes nothing
  EXPECT_TRUE(matchesGolden("reconcile.txt", vrictl_.run({"reconcile"}, true)));
  EXPECT_EQ(*vrid_.fs().read({"cpuset", *CgroupPath::parse(app)}, "cpuset.cpus"), *held);
  EXPECT_TRUE(matchesGolden("tree-64-repaired.txt", vrictl_.run({"tree"})));
  EXPECT_TRUE(matchesGolden("events-after-repair.txt", vrictl_.run({"events", "--recent", "1"})));
}

// vcpupin, emulatorpin and numatune show where a VM runs; on the admin socket the
// first two move it (this vrid has no libvirt: the cgroups only, and vrictl says so).
// Every refusal says why and leaves the ledger and the cgroups as they were.
TEST_F(VrictlGoldenTest, PinsAreShownAndMovedLiveAndRefusalsChangeNothing) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> shows = {
      {"vcpupin-dedicated", {"vcpupin", "db"}},      {"vcpupin-one", {"vcpupin", "db", "2"}},
      {"vcpupin-shared", {"vcpupin", kBuilderUuid}}, {"emulatorpin-shared", {"emulatorpin", "db"}},
      {"numatune-bound", {"numatune", "db"}},        {"numatune-unbound", {"numatune", "builder"}},
  };
  for (const auto& [golden, args] : shows) {
    SCOPED_TRACE(golden);
    EXPECT_TRUE(matchesGolden(golden + ".txt", vrictl_.run(args)));
  }
  // A free CPU on the node of db's memory, and CPUs someone else holds.
  v1::Tenant db;
  {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm(kDbUuid);
    ASSERT_TRUE(vrid_.admin->GetTenant(&context, request, &db).ok());
  }
  const int db_cpu = db.vm().allocation().vcpu_cpus(0);
  const int node_first = db_cpu < 32 ? 0 : 32;
  v1::Node node;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(vrid_.admin->GetNode(&context, {}, &node).ok());
  }
  const CpuSet shared = *CpuSet::parse(node.shared_cpus());
  int free_cpu = -1;
  for (int cpu = node_first + 31; cpu >= node_first + 2; --cpu) {
    if (shared.contains(cpu)) {
      free_cpu = cpu;
      break;
    }
  }
  ASSERT_NE(free_cpu, -1);
  const std::string web_cpu =
      std::to_string(CpuSet::parse(node.exclusive_cpus().at("pod/" + std::string(kWebUid) + "/app"))->first());
  const std::string other_node = std::to_string(node_first == 0 ? 40 : 8);

  const std::string before = vrictl_.run({"dominfo", "db", "--json"});
  const CgroupPath vcpu0 = *CgroupPath::parse("machine/qemu-1-db.libvirt-qemu/vcpu0");
  const auto kernel_before = vrid_.fs().read({"cpuset", vcpu0}, "cpuset.cpus");
  ASSERT_TRUE(kernel_before.ok());
  const std::vector<std::tuple<std::string, std::vector<std::string>, bool>> refusals = {
      {"error-vcpupin-read-only", {"vcpupin", "db", "0", std::to_string(free_cpu)}, false},
      {"error-vcpupin-taken", {"vcpupin", "db", "0", web_cpu}, true},
      {"error-vcpupin-reserved", {"vcpupin", "db", "0", "0"}, true},
      {"error-vcpupin-other-node", {"vcpupin", "db", "0", other_node}, true},
      {"error-vcpupin-set", {"vcpupin", "db", "0", "20-21"}, true},
      {"error-vcpupin-bad-cpuset", {"vcpupin", "db", "0", "3-1"}, true},
      {"error-vcpupin-no-vcpu", {"vcpupin", "db", "9", "20"}, true},
      {"error-vcpupin-not-an-id", {"vcpupin", "db", "first"}, true},
      {"error-vcpupin-config-alone", {"vcpupin", "db", "--config"}, true},
      {"error-vcpupin-defined-only", {"vcpupin", "spare", "0", "20"}, true},
      {"error-numatune-nodeset", {"numatune", "db", "--nodeset", "1"}, true},
  };
  for (const auto& [golden, args, admin] : refusals) {
    SCOPED_TRACE(golden);
    EXPECT_TRUE(matchesGolden(golden + ".txt", vrictl_.run(args, admin)));
    EXPECT_EQ(vrictl_.run({"dominfo", "db", "--json"}), before);
    EXPECT_EQ(*vrid_.fs().read({"cpuset", vcpu0}, "cpuset.cpus"), *kernel_before);
  }

  // db's vCPU 0 moves to the free CPU: the ledger and its cgroup say so.
  EXPECT_TRUE(matchesGolden("vcpupin-move.txt", vrictl_.run({"vcpupin", "db", "0", std::to_string(free_cpu)}, true)));
  EXPECT_EQ(*vrid_.fs().read({"cpuset", vcpu0}, "cpuset.cpus"), std::to_string(free_cpu));
  // Swapped with vCPU 1, in JSON.
  EXPECT_TRUE(matchesGolden(
      "vcpupin-swap.json.txt",
      vrictl_.run({"vcpupin", "db", "0", std::to_string(db.vm().allocation().vcpu_cpus(1)), "--json"}, true)));
  // builder's vCPU 1 takes a CPU: builder becomes mixed; its emulator takes one too; then both go back.
  const CgroupPath builder1 = *CgroupPath::parse("machine/qemu-2-builder.libvirt-qemu/vcpu1");
  EXPECT_TRUE(matchesGolden("vcpupin-shared-takes-a-cpu.txt", vrictl_.run({"vcpupin", "builder", "1", "20"}, true)));
  EXPECT_EQ(*vrid_.fs().read({"cpuset", builder1}, "cpuset.cpus"), "20");
  EXPECT_TRUE(matchesGolden("emulatorpin-move.txt", vrictl_.run({"emulatorpin", "builder", "21"}, true)));
  EXPECT_TRUE(matchesGolden("list-vms-after-moves.txt", vrictl_.run({"list", "--vms"})));
  EXPECT_TRUE(matchesGolden("vcpupin-back-to-shared.txt", vrictl_.run({"vcpupin", "builder", "1", "shared"}, true)));
  EXPECT_TRUE(matchesGolden("emulatorpin-back-to-shared.txt", vrictl_.run({"emulatorpin", "builder", "shared"}, true)));
  EXPECT_EQ(
      *vrid_.fs().read({"cpuset", builder1}, "cpuset.cpus"),
      *vrid_.fs().read({"cpuset", *CgroupPath::parse("machine/qemu-2-builder.libvirt-qemu/vcpu0")}, "cpuset.cpus"));
  EXPECT_TRUE(matchesGolden("events-after-moves.txt", vrictl_.run({"events", "--recent", "5"})));
  EXPECT_TRUE(matchesGolden("tree-64-after-moves.txt", vrictl_.run({"tree"})));
}

// 256 CPUs on two packages, 70 tenants with exclusive CPUs: more than the map has marks for.
TEST(VrictlGolden256Test, MapAndTreeOfALargeMachineFitEightyColumns) {
  DaemonHarness vrid("pack:2 numa:2(memory=64GiB) core:32 pu:2", "0-255", "0-3");
  ASSERT_TRUE(vrid.start());
  for (int i = 0; i < 70; ++i) {
    char uid[40];
    std::snprintf(uid, sizeof uid, "9b000000-0000-4000-8000-%012d", i);
    auto pod = container(uid, v1::GUARANTEED, i % 3 == 0 ? 2000 : 1000, i % 3 == 0 ? 2000 : 1000,
                         "d" + std::to_string(1000 + i), "app");
    pod.set_pod_name("load/p" + std::to_string(i));
    admit(vrid, pod);
  }
  auto shared = container("9b000000-ffff-4000-8000-000000000000", v1::BURSTABLE, 500, 0, "e1", "web");
  shared.set_pod_name("load/web");
  admit(vrid, shared);
  const Vrictl vrictl{vrid};
  const std::string map = vrictl.run({"map"});
  EXPECT_TRUE(matchesGolden("map-256.txt", map));
  const std::string tree = vrictl.run({"tree"});
  EXPECT_TRUE(matchesGolden("tree-256.txt", tree));
  // Each map line fits 80 columns (the tree's long paths wrap their values onto the next line).
  std::istringstream lines(map);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 80u) << line;
}

}  // namespace
}  // namespace vri::testing
