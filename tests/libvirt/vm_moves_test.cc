// vrictl vcpupin with a real libvirtd and QEMU guest: a running guest's vCPU
// moves, and the ledger, its cgroup, the thread's affinity, `virsh vcpupin` and
// VRI's record in the live XML agree; a save/restore then places it afresh; a
// move while libvirtd is down is pending and lands when it is back.
#include "tests/libvirt/libvirt_e2e_fixture.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using testing::domainXml;
using testing::eventually;
using ::testing::HasSubstr;

// No reserved CPU: both CPUs of this machine can be taken, one at a time.
class LibvirtMovesTest : public testing::LibvirtEndToEndTest {
 protected:
  LibvirtMovesTest() { vridArgs_ = {"--system-reserved-cpu=0"}; }

  // vrictl on the admin socket: its exit code, stdout and stderr in `output`.
  int vrictl(const std::vector<std::string>& args, std::string* output) {
    std::vector<std::string> argv = {VRICTL_BINARY, "--socket=" + vrid_->adminSocket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::runCommand(argv, output, tmp_.sub("vrictl.out"));
  }
  // The ledger, the vCPU's cgroup and thread, and libvirt's live pin all say `cpus`.
  void expectVcpu0On(const std::string& name, const std::string& cpus) {
    const auto info = vm(name);
    ASSERT_TRUE(info.has_value());
    const int placed = info->allocation().vcpu_cpus(0);
    EXPECT_EQ(placed < 0 ? sharedPool() : std::to_string(placed), cpus);
    const std::string group = scope(name);
    EXPECT_EQ(this->cpus(group + "/vcpu0"), cpus);
    EXPECT_TRUE(eventually([&] { return threadAffinity(group + "/vcpu0") == cpus; }))
        << threadAffinity(group + "/vcpu0");
    EXPECT_TRUE(eventually([&] {
      return virshOut({"vcpupin", name}).find(" 0      " + cpus + "\n") != std::string::npos;
    })) << virshOut({"vcpupin", name});
  }
  // The PINS_DRIFTED events vrid has announced.
  std::vector<std::string> driftEvents() {
    std::string out;
    vrictl({"events", "--recent", "256"}, &out);
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.find("PINS_DRIFTED") != std::string::npos) lines.push_back(line);
    }
    return lines;
  }
  // VRI's record in the live XML: the request as the ledger holds it, vCPU 0 on `cpus` (the shared pool's when
  // `shared`, recorded as such), as libvirt holds it.
  void expectLiveRecord(const std::string& name, const std::string& policy, const std::string& cpus,
                        bool shared = false) {
    const std::string mark = shared ? "pool=\"shared\"" : "cpuset=\"" + cpus + "\"";
    EXPECT_TRUE(eventually([&] {
      const std::string xml = virshOut({"dumpxml", name});
      return xml.find("<vri:cpu policy=\"" + policy + "\"") != std::string::npos &&
             xml.find("<vri:vcpupin vcpu=\"0\" " + mark + "/>") != std::string::npos &&
             xml.find("<vcpupin vcpu='0' cpuset='" + cpus + "'/>") != std::string::npos;
    })) << virshOut({"dumpxml", name});
  }
};

TEST_F(LibvirtMovesTest, VcpupinMovesARunningGuestAndASaveRestorePlacesItAfresh) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-web", domainXml("vri-test-web", 21, "")));
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0-1"));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "shared", "0-1", true));

  // The shared vCPU takes CPU 1: it is dedicated now, and the emulator leaves CPU 1 with the pool.
  std::string out;
  ASSERT_EQ(vrictl({"vcpupin", "vri-test-web", "0", "1"}, &out), 0) << out << vrid_->log();
  EXPECT_THAT(out, HasSubstr("own CPU"));
  EXPECT_EQ(vm("vri-test-web")->spec().cpu_policy(), v1::DEDICATED);
  EXPECT_EQ(sharedPool(), "0");
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "1"));
  EXPECT_EQ(cpus(scope("vri-test-web") + "/emulator"), "0");
  EXPECT_TRUE(eventually([&] {
    return virshOut({"emulatorpin", "vri-test-web"}).find("*: 0\n") != std::string::npos;
  })) << virshOut({"emulatorpin", "vri-test-web"});
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "dedicated", "1"));

  // The persistent definition is left alone without --config.
  EXPECT_THAT(virshOut({"dumpxml", "--inactive", "vri-test-web"}), ::testing::Not(HasSubstr("policy=\"dedicated\"")));

  // And on to CPU 0, with --config: CPU 1 goes back to the pool, and the definition keeps the VM dedicated,
  // its pins marked as VRI's (placed afresh at the next start).
  ASSERT_EQ(vrictl({"vcpupin", "vri-test-web", "0", "0", "--config"}, &out), 0) << out << vrid_->log();
  EXPECT_EQ(sharedPool(), "1");
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0"));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "dedicated", "0"));
  const std::string definition = virshOut({"dumpxml", "--inactive", "vri-test-web"});
  EXPECT_THAT(definition, HasSubstr("<vri:cpu policy=\"dedicated\""));
  EXPECT_THAT(definition, HasSubstr("<vri:vcpupin vcpu=\"0\" cpuset=\"0\"/>"));
  EXPECT_THAT(definition, HasSubstr("<vcpupin vcpu='0' cpuset='0'/>"));

  // Saved and restored: read as VRI's pins and placed afresh as a dedicated VM, not held to CPU 0 as the user's.
  ASSERT_EQ(virsh({"save", "vri-test-web", tmp_.sub("web.save")}, &out), 0) << out;
  EXPECT_FALSE(vm("vri-test-web").has_value());
  ASSERT_EQ(virsh({"restore", tmp_.sub("web.save")}, &out), 0) << out << vrid_->log();
  const auto restored = vm("vri-test-web");
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->spec().cpu_policy(), v1::DEDICATED);
  EXPECT_TRUE(restored->spec().pinned_vcpu_cpus().empty());
  const std::string now = std::to_string(restored->allocation().vcpu_cpus(0));
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", now));

  // Given back to the shared pool: a shared VM again, everywhere.
  ASSERT_EQ(vrictl({"vcpupin", "vri-test-web", "0", "shared"}, &out), 0) << out << vrid_->log();
  EXPECT_EQ(vm("vri-test-web")->spec().cpu_policy(), v1::SHARED);
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0-1"));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "shared", "0-1", true));
  ASSERT_EQ(vrictl({"events", "--recent", "20"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("MOVED"));
}

TEST_F(LibvirtMovesTest, AMoveWithConfigKeepsTheDomainsOwnNumatuneForTheStopToPutBack) {
  // Defined: VRI's placement and <numatune> in the definition, with its record of the domain's own (none).
  const std::string name = "vri-test-db";
  std::ofstream(tmp_.sub(name + ".xml")) << domainXml(name, 24, "dedicated");
  std::string out;
  ASSERT_EQ(virsh({"define", tmp_.sub(name + ".xml")}, &out), 0) << out;
  const auto definition = [&] { return virshOut({"dumpxml", "--inactive", name}); };
  ASSERT_TRUE(eventually([&] { return definition().find("<memory mode='strict'") != std::string::npos; }))
      << definition() << vrid_->log();
  ASSERT_EQ(virsh({"start", name}, &out), 0) << out << vrid_->log();
  const std::string other = placedCpu(name) == "0" ? "1" : "0";

  // Moved with --config: the definition's pins and VRI's record of them are rewritten.
  ASSERT_EQ(vrictl({"vcpupin", name, "0", other, "--config"}, &out), 0) << out << vrid_->log();
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On(name, other));
  EXPECT_THAT(definition(), HasSubstr("<vcpupin vcpu='0' cpuset='" + other + "'/>"));
  EXPECT_THAT(definition(), HasSubstr("own-numatune"));

  // Stopped: VRI's pins and <numatune> come out; the domain had no <numatune> of its own.
  ASSERT_EQ(virsh({"destroy", name}, &out), 0) << out;
  EXPECT_TRUE(eventually([&] {
    const std::string now = definition();
    return now.find("vri:placement") == std::string::npos && now.find("vcpupin") == std::string::npos;
  })) << definition()
      << vrid_->log();
  EXPECT_THAT(definition(), ::testing::Not(HasSubstr("numatune"))) << "VRI's <numatune> kept as the domain's own";
}

TEST_F(LibvirtMovesTest, AMoveWhileLibvirtdIsDownIsPendingAndLandsWhenItIsBack) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 22, "dedicated")));
  const std::string from = placedCpu("vri-test-db");
  const std::string to = from == "0" ? "1" : "0";
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", from));
  std::string out;
  ASSERT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + "/tests/libvirt/libvirt-fixture.sh", "stop"}, &out,
                                tmp_.sub("fixture.out")),
            0)
      << out;
  // The ledger and the kernel move; libvirt cannot be told: vrictl says so and exits 1.
  EXPECT_EQ(vrictl({"vcpupin", "vri-test-db", "0", to}, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("pending"));
  EXPECT_EQ(placedCpu("vri-test-db"), to);
  EXPECT_EQ(cpus(scope("vri-test-db") + "/vcpu0"), to);
  ASSERT_EQ(testing::runCommand({std::string(VRI_SOURCE_DIR) + "/tests/libvirt/libvirt-fixture.sh", "start"}, &out,
                                tmp_.sub("fixture.out")),
            0)
      << out;
  // Back: the reconnect keeps the ledger's move (the live XML still read as before it) and tells libvirt.
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", to));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-db", "dedicated", to));
  EXPECT_EQ(placedCpu("vri-test-db"), to) << vrid_->log();
}

// A policy change (operating.md, "Changing the placement policy while vrid runs") that reserves the CPU a
// dedicated vCPU holds: the dry run names the VM and changes nothing; the apply moves the vCPU off it through
// libvirt's live pinning, the definition too, and the ledger, the cgroup, the thread and virsh agree.
TEST_F(LibvirtMovesTest, APolicyChangeMovesADedicatedVmThroughLibvirtsLivePinning) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 25, "dedicated")));
  const std::string from = placedCpu("vri-test-db");
  const std::string to = from == "0" ? "1" : "0";
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", from));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-db", "dedicated", from));

  std::ofstream(tmp_.sub("vrid.conf")) << "reserved_cpus = " << from << "\n";
  std::string out;
  ASSERT_EQ(vrictl({"config", "apply", "--dry-run"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("reserved_cpus: (unset) -> " + from + " (apply)"));
  EXPECT_THAT(out, HasSubstr("vri-test-db"));
  EXPECT_THAT(out, HasSubstr("Nothing was changed."));
  EXPECT_EQ(placedCpu("vri-test-db"), from);
  EXPECT_EQ(cpus(scope("vri-test-db") + "/vcpu0"), from);

  ASSERT_EQ(vrictl({"config", "apply"}, &out), 0) << out << vrid_->log();
  EXPECT_THAT(out, HasSubstr("Applied: the placement policy"));
  EXPECT_THAT(out, HasSubstr("moved: "));
  EXPECT_EQ(placedCpu("vri-test-db"), to);
  EXPECT_EQ(sharedPool(), from);  // reserved CPUs stay shared
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", to));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-db", "dedicated", to));
  EXPECT_TRUE(eventually([&] {
    return virshOut({"emulatorpin", "vri-test-db"}).find("*: " + from + "\n") != std::string::npos;
  })) << virshOut({"emulatorpin", "vri-test-db"});
  // The definition too: the VM starts next time where the ledger holds it.
  EXPECT_TRUE(eventually([&] {
    return virshOut({"dumpxml", "--inactive", "vri-test-db"}).find("<vcpupin vcpu='0' cpuset='" + to + "'/>") !=
           std::string::npos;
  })) << virshOut({"dumpxml", "--inactive", "vri-test-db"});
  EXPECT_THAT(vrid_->log(), ::testing::Not(HasSubstr("libvirt's pins:")));
  ASSERT_EQ(vrictl({"config", "diff"}, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("nothing would be changed"));

  // Restarted on the same file: the ledger's policy is the file's; the VM stays where the change put it.
  stopVrid();
  startVrid();
  EXPECT_THAT(vrid_->log(), ::testing::Not(HasSubstr("placement policy: reserved_cpus")));
  EXPECT_EQ(placedCpu("vri-test-db"), to);
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", to));
}

// A VM vrid started and pinned to the shared pool, saved and restored: its pins read as VRI's.
TEST_F(LibvirtMovesTest, ASharedVmsSaveImageIsPlacedAfreshNotReadAsTheUsersPins) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-web", domainXml("vri-test-web", 23, "")));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "shared", "0-1", true));
  std::string out;
  ASSERT_EQ(virsh({"save", "vri-test-web", tmp_.sub("web.save")}, &out), 0) << out;
  ASSERT_EQ(virsh({"restore", tmp_.sub("web.save")}, &out), 0) << out << vrid_->log();
  const auto restored = vm("vri-test-web");
  ASSERT_TRUE(restored.has_value());
  EXPECT_EQ(restored->spec().cpu_policy(), v1::SHARED);
  EXPECT_TRUE(restored->spec().pinned_vcpu_cpus().empty());
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0-1"));
}

// virsh vcpupin --live behind VRI's back: noticed through libvirt's tunable event and restored.
TEST_F(LibvirtMovesTest, APinSetBehindVrisBackIsRestoredByDefault) {
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", domainXml("vri-test-db", 24, "dedicated")));
  const std::string cpu = placedCpu("vri-test-db");
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", cpu));
  std::string out;
  ASSERT_EQ(virsh({"vcpupin", "vri-test-db", "0", cpu == "0" ? "1" : "0", "--live"}, &out), 0) << out;
  EXPECT_TRUE(eventually([&] { return driftEvents().size() == 1; })) << vrid_->log();
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-db", cpu));
  EXPECT_THAT(driftEvents().at(0), HasSubstr("vCPU 0 pinned to " + std::string(cpu == "0" ? "1" : "0") +
                                             " (VRI: " + cpu + "): restored (libvirt_pin_drift is restore)"));
  EXPECT_EQ(placedCpu("vri-test-db"), cpu);
}

// With libvirt_pin_drift = adopt: a pin onto a free CPU becomes the ledger's (a live move) when the shared
// pool can spare it, and is restored when it cannot; vrid's own re-pins after the pool changed are no drift.
// (On cgroup v1 libvirt itself refuses a pin outside the VM's scope, which VRI narrows to what the VM may use.)
TEST_F(LibvirtMovesTest, WithAdoptAPinThatFitsIsTakenIntoTheLedgerAndOneThatDoesNotIsRestored) {
  stopVrid();
  vridArgs_.push_back("--libvirt-pin-drift=adopt");
  vridArgs_.push_back("--shared-vcpu-request=0.6");  // three shared vCPUs need both CPUs
  startVrid();
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-web", domainXml("vri-test-web", 25, "")));
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-api", domainXml("vri-test-api", 26, "")));
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-ops", domainXml("vri-test-ops", 27, "")));
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0-1"));
  std::string out;
  ASSERT_EQ(virsh({"vcpupin", "vri-test-web", "0", "1", "--live"}, &out), 0) << out;
  EXPECT_TRUE(eventually([&] { return driftEvents().size() == 1; })) << vrid_->log();
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "0-1"));
  EXPECT_EQ(vm("vri-test-web")->spec().cpu_policy(), v1::SHARED);

  ASSERT_EQ(virsh({"destroy", "vri-test-ops"}, &out), 0) << out;
  ASSERT_EQ(virsh({"vcpupin", "vri-test-web", "0", "1", "--live"}, &out), 0) << out;
  EXPECT_TRUE(eventually([&] { return placedCpu("vri-test-web") == "1"; })) << vrid_->log();
  EXPECT_EQ(vm("vri-test-web")->spec().cpu_policy(), v1::DEDICATED);
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-web", "1"));
  ASSERT_NO_FATAL_FAILURE(expectLiveRecord("vri-test-web", "dedicated", "1"));
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-api", "0"));  // the pool shrank, and api followed it
  const auto events = driftEvents();
  ASSERT_EQ(events.size(), 2u) << vrid_->log();
  EXPECT_THAT(events.at(0), HasSubstr("vCPU 0 pinned to 1 (VRI: 0-1): restored ("));
  EXPECT_THAT(events.at(0), HasSubstr("must stay shared"));
  EXPECT_THAT(events.at(1), HasSubstr("vCPU 0 pinned to 1 (VRI: 0-1): adopted"));
}

// virsh setvcpus --live: no hook runs and libvirt 9.0 sends no event for it; vrid counts the VM's vCPUs and re-admits
// it. On this 2-CPU machine a dedicated VM's plugged vCPU finds no CPU the shared pool can spare (the case where it
// does is the ledger's unit test): it runs on the shared pool, counted there, and the event says why.
TEST_F(LibvirtMovesTest, AHotPluggedVcpuIsAdmittedAndPinnedAndTheOperatorIsToldWhereItRuns) {
  const std::string xml =
      "<domain type='qemu'><name>vri-test-db</name><uuid>5e1f0c2d-7a3b-4c5d-9e6f-000000000028</uuid>"
      "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='dedicated'/></vri:domain></metadata>"
      "<memory unit='MiB'>96</memory><vcpu placement='static' current='1'>2</vcpu>"
      "<vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/><vcpu id='1' enabled='no' hotpluggable='yes'/>"
      "</vcpus><os><type arch='x86_64' machine='pc'>hvm</type></os><features><acpi/></features>"
      "<on_poweroff>destroy</on_poweroff><devices><emulator>/usr/bin/qemu-system-x86_64</emulator>"
      "<memballoon model='none'/></devices></domain>";
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-db", xml));
  const std::string own = placedCpu("vri-test-db");
  const std::string pool = own == "0" ? "1" : "0";
  std::string out;
  ASSERT_EQ(virsh({"setvcpus", "vri-test-db", "2", "--live"}, &out), 0) << out;
  ASSERT_TRUE(eventually([&] {
    const auto db = vm("vri-test-db");
    return db && db->allocation().online_vcpus_size() == 2;
  })) << vrid_->log();
  const auto db = vm("vri-test-db");
  EXPECT_EQ(db->allocation().vcpu_cpus(0), std::stoi(own));
  EXPECT_EQ(db->allocation().vcpu_cpus(1), -1);
  EXPECT_EQ(db->spec().cpu_policy(), v1::MIXED);
  const std::string group = scope("vri-test-db");
  EXPECT_EQ(cpus(group + "/vcpu1"), pool);
  EXPECT_TRUE(eventually([&] { return threadAffinity(group + "/vcpu1") == pool; })) << threadAffinity(group + "/vcpu1");
  EXPECT_TRUE(eventually([&] {
    const std::string xml = virshOut({"dumpxml", "vri-test-db"});
    return xml.find("<vri:cpu policy=\"mixed\" dedicated-vcpus=\"0\"") != std::string::npos &&
           xml.find("<vri:vcpupin vcpu=\"1\" pool=\"shared\"/>") != std::string::npos;
  })) << virshOut({"dumpxml", "vri-test-db"});
  ASSERT_EQ(vrictl({"events", "--recent", "10"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("vCPU 1 runs on the shared pool: the shared pool cannot spare a CPU"));
  ASSERT_EQ(vrictl({"dominfo", "vri-test-db"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("2 online of 2"));
  // (Unplugging needs a guest that acknowledges it; this diskless one cannot: the ledger's unit tests cover it.)
}

// A mixed VM whose dedicated vCPU is offline at start: brought online, it gets a CPU of its own.
TEST_F(LibvirtMovesTest, AHotPluggedDedicatedVcpuGetsItsOwnCpu) {
  const std::string xml =
      "<domain type='qemu'><name>vri-test-mixed</name><uuid>5e1f0c2d-7a3b-4c5d-9e6f-000000000029</uuid>"
      "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='mixed' dedicated-vcpus='1'/>"
      "</vri:domain></metadata><memory unit='MiB'>96</memory><vcpu placement='static' current='1'>2</vcpu>"
      "<vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/><vcpu id='1' enabled='no' hotpluggable='yes'/>"
      "</vcpus><os><type arch='x86_64' machine='pc'>hvm</type></os><on_poweroff>destroy</on_poweroff>"
      "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices></domain>";
  ASSERT_NO_FATAL_FAILURE(defineAndStart("vri-test-mixed", xml));
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-mixed", "0-1"));  // vCPU 0 is shared, vCPU 1 holds nothing yet
  EXPECT_EQ(sharedPool(), "0-1");
  std::string out;
  ASSERT_EQ(virsh({"setvcpus", "vri-test-mixed", "2", "--live"}, &out), 0) << out;
  ASSERT_TRUE(eventually([&] {
    const auto vm = this->vm("vri-test-mixed");
    return vm && vm->allocation().online_vcpus_size() == 2;
  })) << vrid_->log();
  const int own = vm("vri-test-mixed")->allocation().vcpu_cpus(1);
  ASSERT_GE(own, 0) << vrid_->log();
  const std::string cpu = std::to_string(own), pool = own == 0 ? "1" : "0";
  EXPECT_EQ(sharedPool(), pool);
  const std::string group = scope("vri-test-mixed");
  EXPECT_EQ(cpus(group + "/vcpu1"), cpu);
  EXPECT_TRUE(eventually([&] { return threadAffinity(group + "/vcpu1") == cpu; })) << threadAffinity(group + "/vcpu1");
  EXPECT_TRUE(eventually([&] {
    return virshOut({"vcpupin", "vri-test-mixed"}).find(" 1      " + cpu + "\n") != std::string::npos;
  })) << virshOut({"vcpupin", "vri-test-mixed"});
  ASSERT_NO_FATAL_FAILURE(expectVcpu0On("vri-test-mixed", pool));  // the shared vCPU followed the pool
  ASSERT_EQ(vrictl({"dominfo", "vri-test-mixed"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("2 online of 2"));
  EXPECT_THAT(out, HasSubstr("vcpu1:               CPU " + cpu));
}

}  // namespace
}  // namespace vri
