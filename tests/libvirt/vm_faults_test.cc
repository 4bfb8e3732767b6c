// VMs whose lifecycle vrid could not follow when it happened, against the host's real libvirtd (label
// `libvirt`): a VM undefined while vrid was down, and a shared VM started while vrid could not record
// anything (its state filesystem full). The soak (scripts/soak.sh) found both; each test here fails
// without the behaviour it names.
#include <fcntl.h>
#include <sys/mount.h>

#include <cstring>

#include "tests/libvirt/libvirt_e2e_fixture.h"

namespace vri::testing {
namespace {

class LibvirtFaultsTest : public LibvirtEndToEndTest {
 protected:
  void TearDown() override {
    LibvirtEndToEndTest::TearDown();
    if (mounted_) ::umount2(tmp_.sub("state").c_str(), MNT_DETACH);
  }

  // vrid again, its state on a 16 MiB filesystem of its own that fill() fills.
  void restartOnSmallStateFilesystem() {
    stopVrid();
    std::filesystem::remove_all(tmp_.sub("state"));
    std::filesystem::create_directories(tmp_.sub("state"));
    ASSERT_EQ(::mount("vri-test-state", tmp_.sub("state").c_str(), "tmpfs", 0, "size=16m,mode=0700"), 0)
        << std::strerror(errno);
    mounted_ = true;
    startVrid();
  }
  void fill() {
    const int fd = ::open(tmp_.sub("state/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::vector<char> block(4096, 'f');
    for (size_t size = block.size(); size > 0; size /= 2)
      while (::write(fd, block.data(), size) > 0) {
      }
    ::close(fd);
  }

  bool mounted_ = false;
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
  fill();
  // vrid answers that it cannot record the VM; the hook lets a shared VM start without it.
  const std::string name = "vri-test-started-full";
  defineAndStart(name, domainXml(name, 62, "shared"));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // libvirt's started event, and a retry or two
  EXPECT_FALSE(vm(name).has_value()) << "recorded on a full filesystem?";

  std::filesystem::remove(tmp_.sub("state/filler"));
  EXPECT_TRUE(eventually([&] { return vm(name).has_value() && !vm(name)->scope().empty(); }))
      << "a running VM vrid could not record is never adopted while vrid runs: " << vrid_->log();
  EXPECT_EQ(placedCpu(name), "-1");  // the shared pool
  EXPECT_THAT(vrid_->log(), ::testing::HasSubstr("adopted: vrid could record it again"));
}

}  // namespace
}  // namespace vri::testing
