// vrictl's every command against a real vrid (in this process, on the cgroupfs
// fixture, over real gRPC sockets), as its users see it: text, JSON, exit codes
// and errors, compared with golden files. The node: 64 CPUs on two NUMA nodes
// with pods of each QoS class and VMs of each policy; and 256 CPUs in 80 columns.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  for (const char* command : {"nodeinfo", "topology", "capacity", "pool", "list", "dominfo", "podinfo", "tree", "map",
                              "events", "reconcile"}) {
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
