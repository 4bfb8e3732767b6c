// VRI with a real libvirtd and QEMU guests: placement, refusals, restarts of
// libvirtd and of vrid, save/restore, define-time placement and what a stop takes back, hot-plugged vCPUs.
// CPU 0 reserved (still shared), CPU 1 free for one dedicated vCPU.
#include "tests/libvirt/libvirt_e2e_fixture.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using testing::domainXml;
using testing::eventually;
using ::testing::HasSubstr;
using testing::LibvirtEndToEndTest;

TEST_F(LibvirtEndToEndTest, DedicatedVmIsPlacedEverywhereASecondIsRefusedDestroyReleases) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 1, "dedicated")));
  auto db = vm("vri-test-db");
  ASSERT_TRUE(db.has_value());
  ASSERT_EQ(db->allocation().vcpu_cpus_size(), 1);
  const std::string cpu = std::to_string(db->allocation().vcpu_cpus(0));
  EXPECT_EQ(cpu, "1");  // CPU 0 is reserved
  const std::string group = scope("vri-test-db");
  EXPECT_EQ(cpus(group + "/vcpu0"), cpu);
  EXPECT_EQ(threadAffinity(group + "/vcpu0"), cpu);
  EXPECT_TRUE(eventually([&] {
    return virshOut({"vcpupin", "vri-test-db"}).find(" 0      " + cpu) != std::string::npos;
  })) << virshOut({"vcpupin", "vri-test-db"});
  EXPECT_EQ(sharedPool(), "0");

  // No CPU left for a second dedicated VM: virsh start fails with VRI's reason.
  std::ofstream(tmp_.sub("second.xml")) << domainXml("vri-test-second", 2, "dedicated");
  ASSERT_EQ(virsh({"define", tmp_.sub("second.xml")}), 0);
  std::string out;
  EXPECT_NE(virsh({"start", "vri-test-second"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("vri: "));
  EXPECT_THAT(out, HasSubstr("vri-test-second"));
  EXPECT_EQ(vmCount(), 1);

  ASSERT_EQ(virsh({"destroy", "vri-test-db"}, &out), 0) << out;
  EXPECT_FALSE(vm("vri-test-db").has_value());
  EXPECT_EQ(sharedPool(), "0-1");
}

TEST_F(LibvirtEndToEndTest, SharedVmsEmulatorFollowsTheSharedPool) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-web", domainXml("vri-test-web", 3, "")));
  const std::string web = scope("vri-test-web");
  EXPECT_EQ(cpus(web + "/emulator"), "0-1");
  EXPECT_EQ(cpus(web + "/vcpu0"), "0-1");

  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 4, "dedicated")));
  EXPECT_EQ(cpus(web + "/emulator"), "0");  // written before the dedicated VM's start went on
  EXPECT_EQ(cpus(web + "/vcpu0"), "0");
  EXPECT_TRUE(eventually([&] {
    return virshOut({"emulatorpin", "vri-test-web"}).find("*: 0\n") != std::string::npos;
  })) << virshOut({"emulatorpin", "vri-test-web"});

  ASSERT_EQ(virsh({"destroy", "vri-test-db"}), 0);
  EXPECT_EQ(cpus(web + "/emulator"), "0-1");
  EXPECT_TRUE(eventually([&] {
    return virshOut({"emulatorpin", "vri-test-web"}).find("*: 0-1") != std::string::npos;
  })) << virshOut({"emulatorpin", "vri-test-web"});
}

TEST_F(LibvirtEndToEndTest, LibvirtdRestartReconnectsAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 5, "dedicated")));
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-web", domainXml("vri-test-web", 6, "")));
  const std::string db = scope("vri-test-db"), web = scope("vri-test-web");
  const std::string before = cpus(db + "/vcpu0") + "|" + cpus(db + "/emulator") + "|" + cpus(web + "/vcpu0");
  const auto db_before = vm("vri-test-db");
  ASSERT_TRUE(db_before.has_value());
  std::string out;
  ASSERT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + "/tests/libvirt/libvirt-fixture.sh", "restart"}, &out,
                                tmp_.sub("restart.out")),
            0)
      << out;
  EXPECT_TRUE(eventually([&] {
    const std::string log = vrid_->log();
    size_t count = 0;
    for (size_t at = log.find("libvirt: connected"); at != std::string::npos;
         at = log.find("libvirt: connected", at + 1))
      ++count;
    return count >= 2;
  })) << vrid_->log();
  EXPECT_EQ(cpus(db + "/vcpu0") + "|" + cpus(db + "/emulator") + "|" + cpus(web + "/vcpu0"), before);
  EXPECT_EQ(vmCount(), 2);
  const auto db_after = vm("vri-test-db");
  ASSERT_TRUE(db_after.has_value()) << vrid_->log();
  EXPECT_EQ(db_after->allocation().DebugString(), db_before->allocation().DebugString());
}

TEST_F(LibvirtEndToEndTest, RestartedVridAdoptsTheRunningVm) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 7, "dedicated")));
  const std::string cpu = placedCpu("vri-test-db");
  const std::string group = scope("vri-test-db");

  stopVrid();
  startVrid();  // same ledger
  EXPECT_EQ(placedCpu("vri-test-db"), cpu) << vrid_->log();

  stopVrid();
  startVrid(true);  // ledger lost: the running domain is found and adopted with its own request
  ASSERT_TRUE(eventually([&] {
    auto adopted = vm("vri-test-db");
    return adopted && adopted->spec().cpu_policy() == v1::DEDICATED && !adopted->scope().empty();
  })) << vrid_->log();
  EXPECT_EQ(placedCpu("vri-test-db"), cpu) << vrid_->log();
  EXPECT_EQ(cpus(group + "/vcpu0"), cpu);
  EXPECT_EQ(vmCount(), 1);
}

TEST_F(LibvirtEndToEndTest, SaveAndRestoreKeepTheVmPlacedAndAdmittedOnce) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 8, "dedicated")));
  const std::string cpu = placedCpu("vri-test-db");
  std::string out;
  ASSERT_EQ(virsh({"save", "vri-test-db", tmp_.sub("db.save")}, &out), 0) << out;
  EXPECT_FALSE(vm("vri-test-db").has_value());  // a saved VM holds nothing
  ASSERT_EQ(virsh({"restore", tmp_.sub("db.save")}, &out), 0) << out << vrid_->log();
  auto restored = vm("vri-test-db");
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(vmCount(), 1);
  const std::string now = std::to_string(restored->allocation().vcpu_cpus(0));
  EXPECT_EQ(cpus(scope("vri-test-db") + "/vcpu0"), now);
  EXPECT_EQ(now, cpu);  // the only free CPU
  EXPECT_TRUE(eventually([&] {
    return virshOut({"vcpupin", "vri-test-db"}).find(" 0      " + now) != std::string::npos;
  })) << virshOut({"vcpupin", "vri-test-db"});
}

TEST_F(LibvirtEndToEndTest, ExplicitVcpupinOnAnExclusiveCpuIsRefused) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 9, "dedicated")));
  std::ofstream(tmp_.sub("pinned.xml")) << domainXml("vri-test-pinned", 10, "",
                                                     "<cputune><vcpupin vcpu='0' cpuset='1'/></cputune>");
  ASSERT_EQ(virsh({"define", tmp_.sub("pinned.xml")}), 0);
  std::string out;
  EXPECT_NE(virsh({"start", "vri-test-pinned"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("<vcpupin> names CPUs 1, which are reserved or held by another tenant"));
  EXPECT_EQ(vmCount(), 1);
}

TEST_F(LibvirtEndToEndTest, DefiningReservesAndWritesVrisPinsRedefiningPlacesAnew) {
  std::ofstream(tmp_.sub("db.xml")) << domainXml("vri-test-db", 11, "dedicated");
  ASSERT_EQ(virsh({"define", tmp_.sub("db.xml")}), 0);
  ASSERT_TRUE(eventually([&] {
    auto reserved = vm("vri-test-db");
    return reserved && reserved->reserved_only() &&
           virshOut({"dumpxml", "--inactive", "vri-test-db"}).find("<vri:placement>") != std::string::npos;
  })) << vrid_->log();
  EXPECT_EQ(sharedPool(), "0");  // CPU 1 is held for it before it runs
  const std::string definition = virshOut({"dumpxml", "--inactive", "vri-test-db"});
  EXPECT_THAT(definition, HasSubstr("<vcpupin vcpu='0' cpuset='1'/>"));

  // The user changes it into a shared VM: the reservation follows.
  std::ofstream(tmp_.sub("db.xml")) << domainXml("vri-test-db", 11, "shared");
  ASSERT_EQ(virsh({"define", tmp_.sub("db.xml")}), 0);
  ASSERT_TRUE(eventually([&] {
    auto reserved = vm("vri-test-db");
    return reserved && reserved->spec().cpu_policy() == v1::SHARED;
  })) << vrid_->log();
  EXPECT_EQ(sharedPool(), "0-1");

  // Undefining a VM that never ran drops its reservation.
  ASSERT_EQ(virsh({"undefine", "vri-test-db"}), 0);
  EXPECT_TRUE(eventually([&] { return !vm("vri-test-db").has_value(); })) << vrid_->log();
}

// A VM that stops gives its CPU back, and its definition the pins VRI wrote: a later start never asks
// libvirt for a CPU another tenant may hold by then. A stop while vrid is away is found at its start.
TEST_F(LibvirtEndToEndTest, AStoppedVmsDefinitionLosesVrisPinsAndItsNextStartIsPlacedAfresh) {
  std::ofstream(tmp_.sub("db.xml")) << domainXml("vri-test-db", 12, "dedicated");
  ASSERT_EQ(virsh({"define", tmp_.sub("db.xml")}), 0);
  const auto definition = [&] { return virshOut({"dumpxml", "--inactive", "vri-test-db"}); };
  ASSERT_TRUE(eventually([&] { return definition().find("<vcpupin vcpu='0' cpuset='1'/>") != std::string::npos; }))
      << vrid_->log();
  EXPECT_THAT(definition(), HasSubstr("<memory mode='strict' nodeset='0'/>"));
  const auto unpinned = [&] {
    const std::string now = definition();
    return now.find("vcpupin") == std::string::npos && now.find("numatune") == std::string::npos &&
           now.find("vri:placement") == std::string::npos && now.find("policy=\"dedicated\"") != std::string::npos;
  };
  std::string out;
  for (int stop = 0; stop < 2; ++stop) {
    ASSERT_EQ(virsh({"start", "vri-test-db"}, &out), 0) << out << vrid_->log();
    EXPECT_EQ(placedCpu("vri-test-db"), "1");
    if (stop == 1) stopVrid();
    ASSERT_EQ(virsh({"destroy", "vri-test-db"}, &out), 0) << out;
    if (stop == 1) startVrid();  // same ledger: it finds the stopped domain's definition as the stop left it
    EXPECT_TRUE(eventually(unpinned)) << definition() << vrid_->log();
    EXPECT_THAT(vrid_->log(), HasSubstr("vri-test-db is not running: VRI's pins taken out of its definition"));
    if (stop == 1) {  // admitted in the ledger vrid kept, the domain inactive to libvirt: released at once
      EXPECT_THAT(vrid_->log(), HasSubstr("vri-test-db is not running (it stopped while vrid was away); released"));
    }
    // Not reserved again: the CPU is back in the shared pool until the VM starts.
    EXPECT_TRUE(eventually([&] { return !vm("vri-test-db").has_value() && sharedPool() == "0-1"; })) << vrid_->log();
  }
  ASSERT_EQ(virsh({"start", "vri-test-db"}, &out), 0) << out << vrid_->log();
  EXPECT_EQ(placedCpu("vri-test-db"), "1");
  ASSERT_EQ(virsh({"destroy", "vri-test-db"}, &out), 0) << out;
}

TEST_F(LibvirtEndToEndTest, OnlyTheVcpusThatRunArePlacedAndAHotPluggedOneLandsOnTheSharedPool) {
  // vCPUs 0 and 2 online, 1 offline and hot-pluggable; vCPU 2 dedicated.
  const std::string xml =
      "<domain type='qemu'><name>vri-test-sparse</name><uuid>5e1f0c2d-7a3b-4c5d-9e6f-000000000009</uuid>"
      "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='mixed' dedicated-vcpus='2'/>"
      "</vri:domain></metadata><memory unit='MiB'>96</memory><vcpu placement='static' current='2'>3</vcpu>"
      "<vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/><vcpu id='1' enabled='no' hotpluggable='yes'/>"
      "<vcpu id='2' enabled='yes' hotpluggable='yes' order='2'/></vcpus>"
      "<os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>"
      "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>";
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-sparse", xml));
  const auto sparse = vm("vri-test-sparse");
  ASSERT_TRUE(sparse.has_value());
  ASSERT_EQ(sparse->allocation().vcpu_cpus_size(), 3);
  EXPECT_EQ(sparse->allocation().vcpu_cpus(2), 1);
  EXPECT_EQ(sparse->allocation().vcpu_cpus(0), -1);
  EXPECT_EQ(sparse->allocation().vcpu_cpus(1), -1);
  const std::string group = scope("vri-test-sparse");
  EXPECT_EQ(cpus(group + "/vcpu2"), "1");
  EXPECT_EQ(threadAffinity(group + "/vcpu2"), "1");
  EXPECT_EQ(cpus(group + "/vcpu0"), "0");  // the shared pool
  EXPECT_FALSE(std::filesystem::exists(group + "/vcpu1"));
  // libvirt agrees, the offline vCPU included: it is pinned to the shared pool ahead.
  EXPECT_TRUE(eventually([&] {
    const std::string pins = virshOut({"vcpupin", "vri-test-sparse"});
    return pins.find(" 0      0") != std::string::npos && pins.find(" 1      0") != std::string::npos &&
           pins.find(" 2      1") != std::string::npos;
  })) << virshOut({"vcpupin", "vri-test-sparse"});

  // Brought online with no hook in between: it runs on the shared pool, never on CPU 1.
  std::string out;
  ASSERT_EQ(virsh({"setvcpus", "vri-test-sparse", "3", "--live"}, &out), 0) << out;
  ASSERT_TRUE(
      eventually([&] { return std::filesystem::exists(group + "/vcpu1/tasks") && !cpus(group + "/vcpu1").empty(); }));
  EXPECT_EQ(cpus(group + "/vcpu1"), "0");
  EXPECT_TRUE(eventually([&] { return threadAffinity(group + "/vcpu1") == "0"; })) << threadAffinity(group + "/vcpu1");
  EXPECT_EQ(cpus(group + "/vcpu2"), "1");
}

}  // namespace
}  // namespace vri
