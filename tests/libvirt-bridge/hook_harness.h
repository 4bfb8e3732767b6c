// The hook against a whole in-process vrid on real unix sockets: every call is
// the vri-hook binary run as libvirt runs it (argv, the domain XML on stdin, a
// hook.conf), which hands it to vrid's hook socket, or to vri-hook-offline
// when vrid cannot be reached. The fixture the hook's tests share, and a small
// domain XML builder.
#pragma once

#include <gtest/gtest.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "libvirt-bridge/hook.h"
#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"
#include "tests/vri/daemon_harness.h"

namespace vri::testing {

inline constexpr char kUuid[] = "6d2b9f4e-1c3a-4e5b-8f70-0123456789ab";
constexpr char kOtherUuid[] = "6d2b9f4e-1c3a-4e5b-8f70-0123456789ac";

inline std::string domainXml(const std::string& name, const std::string& uuid, int vcpus, const std::string& policy,
                             const std::string& cputune = "") {
  std::string xml = "<domain type='qemu'><name>" + name + "</name><uuid>" + uuid +
                    "</uuid><memory unit='MiB'>256</memory><vcpu placement='static'>" + std::to_string(vcpus) +
                    "</vcpu>" + cputune;
  if (!policy.empty()) {
    xml +=
        "<metadata><vri:domain xmlns:vri='urn:vri:domain:1'><vri:cpu policy='" + policy + "'/></vri:domain></metadata>";
  }
  return xml + "<os><type arch='x86_64'>hvm</type></os></domain>";
}

// A domain from tests/data/domains/, as `virsh dumpxml` printed it.
inline std::string domainFile(const std::string& name) {
  std::ifstream in(std::string(VRI_TEST_DATA_DIR) + "/domains/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// What libvirt's own parser says of `xml` (`virsh -c test:///default define`); empty: it takes it.
inline std::string libvirtRefusal(const std::string& xml) {
  virConnectPtr conn = virConnectOpen("test:///default");
  if (conn == nullptr) return "cannot open test:///default";
  virDomainPtr domain = virDomainDefineXML(conn, xml.c_str());
  std::string refusal = domain == nullptr ? virGetLastErrorMessage() : "";
  if (domain != nullptr) virDomainFree(domain);
  virConnectClose(conn);
  return refusal;
}

class HookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(vrid_.start());
    config_.socket = vrid_.config.adminSocket;  // vri-hook calls hook.sock beside it
    config_.timeoutMs = 2000;
    config_.qemuPidDir = vrid_.tmp().sub("qemu");
    std::filesystem::create_directories(config_.qemuPidDir);
  }

  // hook.conf as config_ says, for the binary.
  std::string writeHookConf() {
    const std::string conf = vrid_.tmp().sub("hook.conf");
    std::ofstream(conf) << "socket = " << config_.socket << "\ntimeout_ms = " << config_.timeoutMs
                        << "\nwhen_unreachable = "
                        << (config_.whenUnreachable == WhenUnreachable::kRefuse ? "refuse" : "start-shared")
                        << "\nqemu_pid_dir = " << config_.qemuPidDir << "\n";
    return conf;
  }
  HookOutcome hook(const std::string& name, const std::string& op, const std::string& sub, const std::string& xml) {
    const auto result = runChild({VRI_HOOK_BINARY, name, op, sub, "-"}, xml, vrid_.tmp().sub(""),
                                 {"VRI_HOOK_CONFIG=" + writeHookConf()});
    return {result.exitCode, result.out, result.err};
  }
  int vmCount() {
    grpc::ClientContext context;
    v1::ListTenantsRequest request;
    request.set_kind(v1::ListTenantsRequest::VMS);
    v1::TenantList list;
    EXPECT_TRUE(vrid_.readOnly->ListTenants(&context, request, &list).ok());
    return list.tenants_size();
  }
  v1::VmInfo vm(const std::string& uuid) {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm(uuid);
    v1::Tenant tenant;
    EXPECT_TRUE(vrid_.readOnly->GetTenant(&context, request, &tenant).ok());
    return tenant.vm();
  }
  void writePidFile(const std::string& name, int pid) {
    std::ofstream(config_.qemuPidDir + "/" + name + ".pid") << pid;
  }
  std::string cpus(const std::string& path) {
    auto value = vrid_.fs().read(CgroupDir{"cpuset", *CgroupPath::parse(path)}, "cpuset.cpus");
    return value.ok() ? *value : "<" + value.error().message() + ">";
  }

  DaemonHarness vrid_;
  HookConfig config_;
};

}  // namespace vri::testing
