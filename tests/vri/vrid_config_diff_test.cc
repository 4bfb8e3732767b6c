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

TEST(ConfigDiffTextTest, KubeletsSettingsComeWithTheOrderToChangeThemIn) {
  v1::ConfigDiffReply reply;
  reply.set_origin("/etc/vri/vrid.conf");
  v1::ConfigSettingDiff* setting = reply.add_settings();
  setting->set_option("system_reserved_cpu");
  setting->set_before("500m");
  setting->set_after("1");
  setting->set_takes_effect("apply");
  reply.set_kubelet_config("/etc/kubernetes/kubelet.yaml");
  reply.add_kubelet("kubelet's systemReserved cpu is 500m; vrid's system_reserved_cpu would be 1");
  const std::string text = ctl::formatConfigDiff(reply);
  EXPECT_THAT(text, HasSubstr("kubelet (/etc/kubernetes/kubelet.yaml) would then disagree"));
  EXPECT_THAT(text, HasSubstr("In this order: edit kubelet's file first (nothing changes until kubelet restarts), "
                              "then apply vrid's change (vrictl config apply), then restart kubelet."));
  reply.set_applied(true);
  EXPECT_THAT(ctl::formatConfigDiff(reply), ::testing::Not(HasSubstr("In this order")));
}

class VridConfigApplyTest : public VridConfigDiffTest {
 protected:
  // vrid's configuration file as `file` holds it, from now on.
  void fileSays(const DaemonConfig& file) {
    vrid_.daemon().setConfigReader([file](std::string& origin) -> Result<DaemonConfig> {
      origin = "/etc/vri/vrid.conf";
      return file;
    });
  }
  grpc::Status apply(bool dryRun, v1::ConfigDiffReply* reply) {
    grpc::ClientContext context;
    v1::ApplyConfigRequest request;
    request.set_dry_run(dryRun);
    return vrid_.admin->ApplyConfig(&context, request, reply);
  }
  std::string exclusiveOf(const std::string& uid) {
    grpc::ClientContext context;
    v1::GetTenantRequest get;
    get.set_pod_uid(uid);
    v1::Tenant tenant;
    EXPECT_TRUE(vrid_.readOnly->GetTenant(&context, get, &tenant).ok());
    return tenant.pod().containers(0).exclusive_cpus();
  }
  bool announced(EventKind kind) {
    for (const Event& event : vrid_.daemon().node().recentEvents(100))
      if (event.kind == kind) return true;
    return false;
  }
};

TEST_F(VridConfigApplyTest, ApplyMovesAContainerOffNewlyReservedCpusAndARestartKeepsThePolicyTheLedgerRuns) {
  grpc::ClientContext c1;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 2000, 2000), &placed).ok());
  const CpuSet exclusive = *CpuSet::parse(placed.cpuset_cpus());
  const CpuSet reserved = *CpuSet::parse(node().reserved_cpus()) | exclusive;
  const std::string cgroup = "kubepods/pod" + std::string(kUid) + "/" + kAppId;
  const DaemonConfig original = vrid_.config;
  DaemonConfig edited = original;
  ASSERT_TRUE(setConfigOption(edited, "reserved_cpus", reserved.format()).ok());
  fileSays(edited);

  // The dry run: the plan, and nothing changed.
  v1::ConfigDiffReply planned;
  grpc::Status status = apply(true, &planned);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(planned.applied());
  EXPECT_EQ(planned.origin(), "/etc/vri/vrid.conf");
  ASSERT_EQ(planned.tenants_size(), 1);
  EXPECT_EQ(cpus("cpuset", cgroup), exclusive.format());
  EXPECT_EQ(exclusiveOf(kUid), exclusive.format());

  v1::ConfigDiffReply applied;
  status = apply(false, &applied);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(applied.applied());
  ASSERT_EQ(applied.tenants_size(), 1);
  const CpuSet moved = *CpuSet::parse(applied.tenants(0).cpus_after());
  EXPECT_EQ(moved, *CpuSet::parse(planned.tenants(0).cpus_after()));  // what the dry run said
  EXPECT_FALSE(moved.intersects(reserved));
  EXPECT_EQ(cpus("cpuset", cgroup), moved.format());
  EXPECT_EQ(exclusiveOf(kUid), moved.format());
  EXPECT_EQ(node().reserved_cpus(), reserved.format());
  EXPECT_TRUE(announced(EventKind::kPolicyApplied));
  EXPECT_THAT(ctl::formatConfigDiff(applied),
              HasSubstr("moved: default/0a app: CPUs " + exclusive.format() + " -> " + moved.format()));

  // vrid starts again with the file as it was before the edit: it runs the ledger's policy, keeps
  // every tenant where it is, and reports the file's policy as waiting for an apply.
  ASSERT_TRUE(vrid_.restart());
  EXPECT_TRUE(vrid_.daemon().loadProblems().empty()) << vrid_.daemon().loadProblems().front();
  EXPECT_EQ(node().reserved_cpus(), reserved.format());
  EXPECT_EQ(exclusiveOf(kUid), moved.format());
  EXPECT_EQ(cpus("cpuset", cgroup), moved.format());
  EXPECT_TRUE(announced(EventKind::kPolicyPending));
  EXPECT_EQ(vrid_.daemon().node().facts().pendingPolicy.count("reserved_cpus"), 1u);
  fileSays(original);
  grpc::ClientContext c2;
  v1::DiffConfigRequest fromFile;
  fromFile.set_configuration_file(true);
  v1::ConfigDiffReply pending;
  status = vrid_.admin->DiffConfig(&c2, fromFile, &pending);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(pending.settings_size(), 1);
  EXPECT_EQ(pending.settings(0).option(), "reserved_cpus");
  EXPECT_EQ(pending.settings(0).before(), reserved.format());
  EXPECT_EQ(pending.settings(0).takes_effect(), "apply");

  // SIGHUP takes the same way: the file's policy applied, nothing waiting any more.
  vrid_.daemon().reload(original);
  EXPECT_EQ(node().reserved_cpus(), CpuSet(reserved - exclusive).format());
  EXPECT_TRUE(vrid_.daemon().node().facts().pendingPolicy.empty());
  EXPECT_EQ(exclusiveOf(kUid), moved.format());  // it fits where it is under the old policy too
}

TEST_F(VridConfigApplyTest, ALedgerThatHoldsNoTenantStartsUnderTheFilesPolicy) {
  const std::string reservedBefore = node().reserved_cpus();
  ASSERT_TRUE(setConfigOption(vrid_.config, "reserved_cpus", "0-1").ok());
  ASSERT_TRUE(vrid_.restart());
  EXPECT_EQ(node().reserved_cpus(), "0-1");
  EXPECT_TRUE(vrid_.daemon().node().facts().pendingPolicy.empty());
  EXPECT_FALSE(announced(EventKind::kPolicyPending));
  EXPECT_NE(reservedBefore, "0-1");
}

TEST_F(VridConfigApplyTest, ApplyIsRefusedOnTheReadOnlySocketAndWithoutAFileToRead) {
  v1::ConfigDiffReply reply;
  grpc::ClientContext c1;
  v1::ApplyConfigRequest request;
  EXPECT_EQ(vrid_.readOnly->ApplyConfig(&c1, request, &reply).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const grpc::Status none = apply(false, &reply);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(none.error_message(), HasSubstr("without a configuration file"));
  EXPECT_FALSE(ctl::applyConfigFile(*ctl::connectToVrid(vrid_.config.adminSocket), "other.conf", false).ok());
}

}  // namespace
}  // namespace vri::testing
