// VMs whose lifecycle vrid could not follow when it happened, against the host's real libvirtd (label
// `libvirt`): a VM undefined while vrid was down, a shared VM started while vrid could not record
// anything (its state filesystem full), and a dedicated one refused then. The soak (scripts/soak.sh)
// found the first two; each test here fails without the behaviour it names.
#include "tests/libvirt/libvirt_e2e_fixture.h"
#include "tests/support/small_filesystem.h"

namespace vri::testing {
namespace {

class LibvirtFaultsTest : public LibvirtEndToEndTest {
 protected:
  // vrid again, its state on a 16 MiB filesystem of its own that stateFs_.fill() fills.
  void restartOnSmallStateFilesystem() {
    stopVrid();
    std::filesystem::remove_all(tmp_.sub("state"));
    ASSERT_EQ(stateFs_.mount(tmp_.sub("state")), "");
    startVrid();
  }

  SmallFilesystem stateFs_;  // unmounted after the fixture's TearDown stopped vrid
};

TEST_F(LibvirtFaultsTest, AReservationOfAVmUndefinedWhileVridWasAwayIsReleasedWhenItIsBack) {
  const std::string name = "vri-test-undefined-away";
  std::ofstream(tmp_.sub(name + ".xml")) << domainXml(name, 61, "dedicated");
  std::string out;
  ASSERT_EQ(virsh({"define", tmp_.sub(name + ".xml")}, &out), 0) << out;
  ASSERT_TRUE(eventually([&] { return vmCount() == 1; })) << "no reservation at definition: " << vrid_->log();
  EXPECT_TRUE(vm(name)->reserved_only());

  stopVrid();
  ASSERT_EQ(virsh({"undefine", name}, &out), 0) << out;  // libvirt's event reaches nobody
  startVrid();
  EXPECT_TRUE(eventually([&] { return vmCount() == 0; }))
      << "the reservation of a VM libvirt no longer defines is kept: " << vrid_->log();
}

TEST_F(LibvirtFaultsTest, ASharedVmStartedWhileVridCouldNotRecordItIsAdoptedOnceItCan) {
  restartOnSmallStateFilesystem();
  stateFs_.fill();
  // vrid answers that it cannot record the VM; the hook lets a shared VM start without it.
  const std::string name = "vri-test-started-full";
  defineAndStart(name, domainXml(name, 62, "shared"));
  ASSERT_TRUE(eventually([&] { return vrid_->log().find("started without vrid's decision") != std::string::npos; }))
      << "libvirt's started event did not reach vrid: " << vrid_->log();
  EXPECT_FALSE(vm(name).has_value()) << "recorded on a full filesystem?";

  stateFs_.free();
  EXPECT_TRUE(eventually([&] { return vm(name).has_value() && !vm(name)->scope().empty(); }))
      << "a running VM vrid could not record is never adopted while vrid runs: " << vrid_->log();
  EXPECT_EQ(placedCpu(name), "-1");  // the shared pool
  EXPECT_THAT(vrid_->log(), ::testing::HasSubstr("adopted: vrid could record it again"));
}

TEST_F(LibvirtFaultsTest, ADedicatedVmVridCannotRecordIsRefusedAndTheRefusalSaysVridAnswered) {
  restartOnSmallStateFilesystem();
  stateFs_.fill();
  const std::string name = "vri-test-dedicated-full";
  std::ofstream(tmp_.sub(name + ".xml")) << domainXml(name, 63, "dedicated");
  std::string out;
  ASSERT_EQ(virsh({"define", tmp_.sub(name + ".xml")}, &out), 0) << out;
  EXPECT_NE(virsh({"start", name}, &out), 0) << "started on a full filesystem: " << vrid_->log();
  // vrid was there and answered: the operator is sent to vrid's state, not to its socket.
  EXPECT_THAT(out, ::testing::HasSubstr("cannot decide now"));
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("did not answer")));
  EXPECT_FALSE(vm(name).has_value() && !vm(name)->scope().empty()) << "placed on a full filesystem?";

  stateFs_.free();
  EXPECT_EQ(virsh({"start", name}, &out), 0) << out << vrid_->log();
  EXPECT_NE(placedCpu(name), "-1");
}

}  // namespace
}  // namespace vri::testing
