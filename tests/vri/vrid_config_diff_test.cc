// DiffConfig (vrictl config diff): what running with another configuration would change, through a
// whole vrid on real sockets. Each option that differs and when it takes effect; the placement
// policy's plan for every tenant it would not keep; nothing changed in the ledger or the cgroups.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/vri/vrid_api_fixture.h"
#include "vrictl/config_command.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

class VridConfigDiffTest : public VridApiTest {
 protected:
  grpc::Status diff(const std::string& text, v1::ConfigDiffReply* reply, bool admin = true) {
    grpc::ClientContext context;
    v1::DiffConfigRequest request;
    request.set_config_text(text);
    request.set_origin("next.conf");
    return (admin ? vrid_.admin : vrid_.readOnly)->DiffConfig(&context, request, reply);
  }
};

TEST_F(VridConfigDiffTest, AReservationOverAContainersCpusMovesItOnPaperOnly) {
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 2000, 2000), &placed).ok());
  const CpuSet exclusive = *CpuSet::parse(placed.cpuset_cpus());
  const CpuSet reserved = *CpuSet::parse(node().reserved_cpus());
  const std::string container = "kubepods/pod" + std::string(kUid) + "/" + kAppId;
  const std::string cgroupBefore = cpus("cpuset", container);

  v1::ConfigDiffReply reply;
  const grpc::Status status =
      diff("reserved_cpus = " + (reserved | exclusive).format() + "\nlog_level = debug\n", &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::map<std::string, std::string> takesEffect;
  for (const v1::ConfigSettingDiff& s : reply.settings()) takesEffect[s.option()] = s.takes_effect();
  EXPECT_EQ(takesEffect["reserved_cpus"], "apply");
  EXPECT_EQ(takesEffect["log_level"], "reload");
  EXPECT_TRUE(reply.policy_changes());
  EXPECT_EQ(reply.reserved_after(), (reserved | exclusive).format());
  ASSERT_EQ(reply.tenants_size(), 1);
  const v1::TenantPlan& moved = reply.tenants(0);
  EXPECT_EQ(moved.tenant(), "pod/" + std::string(kUid) + "/app");
  EXPECT_FALSE(moved.breaks());
  EXPECT_EQ(moved.cpus_before(), exclusive.format());
  const CpuSet after = *CpuSet::parse(moved.cpus_after());
  EXPECT_EQ(after.count(), 2);
  EXPECT_FALSE(after.intersects(reserved | exclusive));
  // A plan: the container's cgroup and the ledger are as they were.
  EXPECT_EQ(cpus("cpuset", container), cgroupBefore);
  grpc::ClientContext c2;
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c2, get, &tenant).ok());
  EXPECT_EQ(tenant.pod().containers(0).exclusive_cpus(), exclusive.format());

  const std::string text = ctl::formatConfigDiff(reply);
  // This vrid reserves CPU 0 by count (system_reserved_cpu), reserved_cpus unset.
  EXPECT_THAT(text, HasSubstr("reserved_cpus: (unset) -> " + (reserved | exclusive).format() + " (apply)"));
  EXPECT_THAT(text, HasSubstr("Placement policy: reserved CPUs " + reserved.format() + " -> " +
                              (reserved | exclusive).format()));
  EXPECT_THAT(text, HasSubstr("moves: default/0a app: CPUs " + exclusive.format() + " -> " + after.format()));
  EXPECT_THAT(text, HasSubstr("Nothing was changed."));
}

TEST_F(VridConfigDiffTest, RefusedOnTheReadOnlySocketAndForAConfigurationThatDoesNotParse) {
  v1::ConfigDiffReply reply;
  EXPECT_EQ(diff("log_level = debug\n", &reply, false).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const grpc::Status bad = diff("reserved_cpus = 3-1\n", &reply);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("next.conf:1: reserved_cpus"));
  // The running vrid's placement policy (this harness's VMs have no memory overhead): no plan.
  v1::ConfigDiffReply same;
  ASSERT_TRUE(diff("vm_memory_overhead = 0\n", &same).ok());
  for (const v1::ConfigSettingDiff& s : same.settings()) EXPECT_NE(s.takes_effect(), "apply") << s.option();
  EXPECT_FALSE(same.policy_changes());
}

}  // namespace
}  // namespace vri::testing
