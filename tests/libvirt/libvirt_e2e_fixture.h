// The fixture of the tests with a real libvirtd and QEMU guests (software
// emulation), driven by virsh: vri-hook installed as libvirt's qemu hook, vrid
// on the real cgroupfs with its libvirt connection. Needs root, libvirtd
// started by tests/libvirt/libvirt-fixture.sh (which installs the hook before
// libvirtd starts), 2 CPUs.
#pragma once

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "base/cpuset.h"
#include "proto/vri.grpc.pb.h"
#include "tests/libvirt/libvirt_harness.h"
#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"
#include "tests/vri/vrid_process.h"

namespace vri::testing {

class LibvirtEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "needs root";
    ASSERT_EQ(virsh({"version"}), 0) << "libvirtd is not running at qemu:///system: start it with "
                                        "tests/libvirt/libvirt-fixture.sh up <build>/libvirt-bridge/vri-hook";
    ASSERT_TRUE(std::filesystem::exists(testing::kHookPath))
        << testing::kHookPath
        << " is missing; libvirtd only finds hooks that exist when it starts (libvirt-fixture.sh up)";
    hook_ = std::make_unique<testing::InstalledHook>(VRI_HOOK_BINARY, tmp_.sub("run/admin.sock"));
    cleanDomains();
    startVrid();
  }

  void TearDown() override {
    cleanDomains();  // before vrid stops: the hook releases what ran
    admin_.reset();
    if (vrid_) {
      EXPECT_EQ(vrid_->stop(), 0) << vrid_->log();
    }
    hook_.reset();
  }

  void startVrid(bool freshState = false) {
    if (freshState) std::filesystem::remove_all(tmp_.sub("state"));
    std::vector<std::string> args = {"--topology=live", "--machine-partition=machine",
                                     "--cgroup-v1-controllers=cpuset,cpu,cpuacct", "--libvirt-uri=qemu:///system",
                                     "--log-level=debug"};
    args.insert(args.end(), vridArgs_.begin(), vridArgs_.end());
    vrid_ = std::make_unique<testing::VridProcess>(tmp_, "vrid", args);
    ASSERT_TRUE(vrid_->start());
    admin_ = v1::Vri::NewStub(grpc::CreateChannel("unix:" + vrid_->adminSocket(), grpc::InsecureChannelCredentials()));
  }
  void stopVrid() {
    admin_.reset();
    EXPECT_EQ(vrid_->stop(), 0) << vrid_->log();
    vrid_.reset();
  }

  int virsh(const std::vector<std::string>& args, std::string* output = nullptr) {
    return testing::virsh(args, tmp_.sub("virsh.out"), output);
  }
  void defineAndStart(const std::string& name, const std::string& xml) {
    std::ofstream(tmp_.sub(name + ".xml")) << xml;
    std::string out;
    ASSERT_EQ(virsh({"define", tmp_.sub(name + ".xml")}, &out), 0) << out;
    ASSERT_EQ(virsh({"start", name}, &out), 0) << out << vrid_->log();
  }
  void cleanDomains() { testing::cleanDomains(tmp_.sub("virsh.out")); }

  std::optional<v1::VmInfo> vm(const std::string& name) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm(name);
    v1::Tenant tenant;
    if (!admin_->GetTenant(&context, request, &tenant).ok()) return std::nullopt;
    return tenant.vm();
  }
  int vmCount() {
    grpc::ClientContext context;
    v1::ListTenantsRequest request;
    request.set_kind(v1::ListTenantsRequest::VMS);
    v1::TenantList list;
    EXPECT_TRUE(admin_->ListTenants(&context, request, &list).ok());
    return list.tenants_size();
  }
  // The CPU the ledger gives the VM's vCPU 0, or "none".
  std::string placedCpu(const std::string& name) {
    const auto info = vm(name);
    if (!info || info->allocation().vcpu_cpus_size() == 0) return "none";
    return std::to_string(info->allocation().vcpu_cpus(0));
  }
  std::string sharedPool() {
    grpc::ClientContext context;
    v1::Node node;
    EXPECT_TRUE(admin_->GetNode(&context, {}, &node).ok());
    return node.shared_cpus();
  }
  // The VM's scope in the cpuset hierarchy, found through QEMU's pid as vrid does.
  std::string scope(const std::string& name) {
    const std::string pid = trimmed(readFile("/run/libvirt/qemu/" + name + ".pid"));
    std::istringstream lines(readFile("/proc/" + pid + "/cgroup"));
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find(":cpuset:");
      if (at != std::string::npos) {
        std::string path = line.substr(at + 8);
        return "/sys/fs/cgroup/cpuset" + path.substr(0, path.rfind("/emulator"));
      }
    }
    return "";
  }
  std::string cpus(const std::string& group) { return trimmed(readFile(group + "/cpuset.cpus")); }
  std::string threadAffinity(const std::string& group) {
    const std::string tid = trimmed(readFile(group + "/tasks"));
    std::istringstream status(readFile("/proc/" + tid + "/status"));
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) return trimmed(line.substr(line.find_first_not_of(" \t", 18)));
    }
    return "";
  }
  std::string virshOut(const std::vector<std::string>& args) {
    std::string out;
    virsh(args, &out);
    return out;
  }

  // vrid's options besides the fixed ones: by default CPU 0 reserved (still shared), CPU 1 free for one
  // dedicated vCPU.
  std::vector<std::string> vridArgs_ = {"--reserved-cpus=0"};
  testing::TempDir tmp_;
  std::unique_ptr<testing::VridProcess> vrid_;
  std::unique_ptr<v1::Vri::Stub> admin_;
  std::unique_ptr<testing::InstalledHook> hook_;
};

}  // namespace vri::testing
