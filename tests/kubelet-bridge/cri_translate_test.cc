// Between CRI and vrid: the QoS class from kubelet's cgroup parent (either
// driver), kubelet's CPU values turned back into milli-CPU, vrid's allocation
// written with full explicit values, fields this proto does not declare kept
// through a rewrite, and which containers have finished for good.
#include "kubelet-bridge/cri_translate.h"

#include <google/protobuf/util/json_util.h>

#include <limits>

#include "kubelet-bridge/ledger_sync.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri::cri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CriTranslateTest, KubeletsCpuValuesTurnBackIntoTheMilliCpuTheyCameFrom) {
  for (int64_t milli = 3; milli <= 64000; ++milli) {
    const int64_t shares = milli * 1024 / 1000;  // kubelet's MilliCPUToShares
    ASSERT_EQ(*requestMilliFromShares(shares), milli) << milli;
    const int64_t quota = std::max<int64_t>(1000, milli * 100000 / 1000);  // kubelet's MilliCPUToQuota
    ASSERT_EQ(*limitMilliFromQuota(quota, 100000), std::max<int64_t>(10, milli)) << milli;
  }
  EXPECT_EQ(*requestMilliFromShares(2), 0);  // BestEffort: no request
  EXPECT_EQ(*requestMilliFromShares(0), 0);
  EXPECT_EQ(*requestMilliFromShares(262144), 256000);
  EXPECT_EQ(*limitMilliFromQuota(-1, 100000), 0);
  EXPECT_EQ(*limitMilliFromQuota(50000, 0), 500);               // no period given: the default
  EXPECT_EQ(*limitMilliFromQuota(819200000, 100000), 8192000);  // the most any node holds
}

runtime::v1::CreateContainerRequest kubeletCreate(const std::string& parent, int64_t shares, int64_t quota) {
  runtime::v1::CreateContainerRequest create;
  create.set_pod_sandbox_id("sandbox1");
  create.mutable_sandbox_config()->mutable_metadata()->set_uid("uid-1");
  create.mutable_sandbox_config()->mutable_metadata()->set_name("web");
  create.mutable_sandbox_config()->mutable_metadata()->set_namespace_("shop");
  create.mutable_sandbox_config()->mutable_linux()->set_cgroup_parent(parent);
  create.mutable_config()->mutable_metadata()->set_name("app");
  runtime::v1::LinuxContainerResources& r = *create.mutable_config()->mutable_linux()->mutable_resources();
  r.set_cpu_shares(shares);
  r.set_cpu_quota(quota);
  r.set_cpu_period(100000);
  r.set_memory_limit_in_bytes(64 << 20);
  return create;
}

// Every numeric field of the three CRI messages the shim reads, at the edges of
// its type and just past what any node holds: refused with the field's name,
// never wrapped into a small request or "no limit".
TEST(CriTranslateTest, ExtremeCpuAndMemoryValuesAreRefusedNamingTheField) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    const char* field;
    void (runtime::v1::LinuxContainerResources::*set)(int64_t);
    std::vector<int64_t> refused, accepted;
  };
  const std::vector<Case> cases = {
      {"cpu_shares",
       &runtime::v1::LinuxContainerResources::set_cpu_shares,
       {-1, kMin, kMax, 262145, 9300000000000000},
       {0, 2, 262144}},
      {"cpu_quota",
       &runtime::v1::LinuxContainerResources::set_cpu_quota,
       {-2, kMin, kMax, 819300000, 92233720368548},
       {-1, 0, 1000, 819200000}},
      {"cpu_period", &runtime::v1::LinuxContainerResources::set_cpu_period, {-1, kMin, kMax, 1000001}, {0, 1000000}},
      {"memory_limit_in_bytes",
       &runtime::v1::LinuxContainerResources::set_memory_limit_in_bytes,
       {-1, kMin, kMax, (int64_t{1} << 52) + 1},
       {0, int64_t{1} << 52}},
  };
  for (const Case& c : cases) {
    auto check = [&](int64_t value, bool accepted) {
      const std::string what = std::string(c.field) + "=" + std::to_string(value);
      runtime::v1::CreateContainerRequest create = kubeletCreate("/kubepods/burstable/poduid-1", 1024, 0);
      (create.mutable_config()->mutable_linux()->mutable_resources()->*c.set)(value);
      runtime::v1::PodSandboxConfig sandbox = create.sandbox_config();
      (sandbox.mutable_linux()->mutable_overhead()->*c.set)(value);
      runtime::v1::UpdateContainerResourcesRequest update;
      update.set_container_id("c1");
      *update.mutable_linux() = create.config().linux().resources();
      const std::vector<std::pair<std::string, Result<void>>> results = {
          {"CreateContainer",
           admitContainerRequest(create).ok() ? Result<void>() : admitContainerRequest(create).error()},
          {"RunPodSandbox", admitPodRequest(sandbox).ok() ? Result<void>() : admitPodRequest(sandbox).error()},
          {"UpdateContainerResources", resizeRequest(update).ok() ? Result<void>() : resizeRequest(update).error()},
      };
      for (const auto& [call, result] : results) {
        if (accepted) {
          EXPECT_TRUE(result.ok()) << call << " " << what << ": " << result.error().message();
        } else {
          ASSERT_FALSE(result.ok()) << call << " " << what;
          EXPECT_EQ(result.error().code(), ErrorCode::kInvalidArgument) << call << " " << what;
          EXPECT_THAT(result.error().message(), HasSubstr(c.field)) << call << " " << what;
        }
      }
    };
    for (int64_t value : c.refused) check(value, false);
    for (int64_t value : c.accepted) check(value, true);
  }
}

TEST(CriTranslateTest, AnUpdateWithoutAContainerIdSaysSo) {
  runtime::v1::UpdateContainerResourcesRequest update;
  update.mutable_linux()->set_cpu_shares(1024);
  auto resize = resizeRequest(update);
  ASSERT_FALSE(resize.ok());
  EXPECT_EQ(resize.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(resize.error().message(), "container_id: must not be empty");
}

TEST(CriTranslateTest, ACreateIsAnAdmitByPodUidAndContainerName) {
  auto admit = admitContainerRequest(kubeletCreate("/kubepods/poduid-1", 2048, 200000));
  ASSERT_TRUE(admit.ok()) << admit.error().message();
  EXPECT_EQ(admit->pod_uid(), "uid-1");
  EXPECT_EQ(admit->pod_name(), "shop/web");
  EXPECT_EQ(admit->container_name(), "app");
  // vrid reads the QoS class from the cgroup parent: the shim passes it on and decides nothing.
  EXPECT_EQ(admit->qos(), v1::QOS_UNSPECIFIED);
  EXPECT_EQ(admit->cgroup_parent(), "/kubepods/poduid-1");
  EXPECT_EQ(admit->cpu_request_milli(), 2000);
  EXPECT_EQ(admit->cpu_limit_milli(), 2000);
  EXPECT_EQ(admit->memory_limit_bytes(), 64u << 20);
  auto burstable = admitContainerRequest(kubeletCreate("/kubepods/burstable/poduid-1", 1024, 0));
  EXPECT_EQ(burstable->cgroup_parent(), "/kubepods/burstable/poduid-1");
  EXPECT_EQ(burstable->cpu_limit_milli(), 0);

  runtime::v1::CreateContainerRequest nameless = kubeletCreate("/kubepods/poduid-1", 2, 0);
  nameless.mutable_config()->clear_metadata();
  EXPECT_FALSE(admitContainerRequest(nameless).ok());
}

// kubelet sends one hugepage limit for every size the host has ("2MB", "1GB"), 0 for the sizes the
// container does not ask for: each goes to vrid in bytes, 0 kept (it means none, not unlimited).
TEST(CriTranslateTest, HugepageLimitsGoToVridInBytesEverySizeKept) {
  runtime::v1::CreateContainerRequest create = kubeletCreate("/kubepods/poduid-1", 2048, 200000);
  auto* resources = create.mutable_config()->mutable_linux()->mutable_resources();
  runtime::v1::HugepageLimit* two = resources->add_hugepage_limits();
  two->set_page_size("2MB");
  two->set_limit(64ULL << 20);
  runtime::v1::HugepageLimit* one = resources->add_hugepage_limits();
  one->set_page_size("1GB");
  one->set_limit(0);
  auto admit = admitContainerRequest(create);
  ASSERT_TRUE(admit.ok()) << admit.error().message();
  ASSERT_EQ(admit->hugepage_limits_size(), 2);
  EXPECT_EQ(admit->hugepage_limits(0).page_size_bytes(), 2ULL << 20);
  EXPECT_EQ(admit->hugepage_limits(0).limit_bytes(), 64ULL << 20);
  EXPECT_EQ(admit->hugepage_limits(1).page_size_bytes(), 1ULL << 30);
  EXPECT_EQ(admit->hugepage_limits(1).limit_bytes(), 0u);
  EXPECT_EQ(*hugepageSizeBytes("64KB"), 64u << 10);
  for (const char* bad : {"", "2M", "3MB", "MB", "2 MB", "1234567GB", "-2MB", "0MB"}) {
    EXPECT_FALSE(hugepageSizeBytes(bad).ok()) << bad;
  }
  two->set_page_size("2mb");
  EXPECT_THAT(admitContainerRequest(create).error().message(),
              HasSubstr("config.linux.resources: hugepage_limits: page_size: not a page size: \"2mb\""));
}

TEST(CriTranslateTest, TheAllocationIsWrittenWithFullExplicitValues) {
  v1::ContainerAllocation exclusive;
  exclusive.set_cpuset_cpus("3");
  exclusive.set_exclusive(true);
  exclusive.set_cpu_shares(1024);
  exclusive.set_cpu_weight(39);
  exclusive.set_cpu_period_us(100000);
  runtime::v1::LinuxContainerResources r;
  r.set_memory_limit_in_bytes(64 << 20);
  applyAllocation(exclusive, NodeCgroups{false, "0-1"}, r);
  EXPECT_EQ(r.cpuset_cpus(), "3");
  EXPECT_EQ(r.cpuset_mems(), "0-1");  // never "", which the runtime reads as "keep"
  EXPECT_EQ(r.cpu_shares(), 1024);
  EXPECT_EQ(r.cpu_quota(), -1);  // no quota, said explicitly
  EXPECT_EQ(r.cpu_period(), 100000);
  EXPECT_EQ(r.memory_limit_in_bytes(), 64 << 20);
  EXPECT_THAT(r.unified(), IsEmpty());  // runc refuses `unified` on v1

  v1::ContainerAllocation shared;
  shared.set_cpuset_cpus("0-2");
  shared.set_cpuset_mems("1");
  shared.set_cpu_shares(256);
  shared.set_cpu_weight(10);
  shared.set_cpu_quota_us(50000);
  shared.set_cpu_period_us(100000);
  shared.set_memory_limit_bytes(128 << 20);
  applyAllocation(shared, NodeCgroups{true, "0-1"}, r);
  EXPECT_EQ(r.cpuset_mems(), "1");
  EXPECT_EQ(r.cpu_quota(), 50000);
  EXPECT_EQ(r.memory_limit_in_bytes(), 128 << 20);
  EXPECT_EQ(r.unified().at("cpu.weight"), "10");
}

TEST(CriTranslateTest, ASandboxWithoutCgroupParentIsAPodOutsideKubeletsTree) {
  // crictl or critest: no cgroup parent. Admitted all the same, as a pod the runtime places.
  runtime::v1::CreateContainerRequest create = kubeletCreate("", 512, 50000);
  auto pod = admitPodRequest(create.sandbox_config());
  ASSERT_TRUE(pod.ok()) << pod.error().message();
  EXPECT_TRUE(pod->outside_kubelet_tree());
  EXPECT_EQ(pod->cgroup_parent(), "");
  auto container = admitContainerRequest(create);
  ASSERT_TRUE(container.ok()) << container.error().message();
  EXPECT_TRUE(container->outside_kubelet_tree());
  EXPECT_EQ(container->cpu_limit_milli(), 500);

  auto kubelets = admitPodRequest(kubeletCreate("/kubepods/poduid-1", 2, 0).sandbox_config());
  ASSERT_TRUE(kubelets.ok());
  EXPECT_FALSE(kubelets->outside_kubelet_tree());
}

TEST(CriTranslateTest, OutsideKubeletsTreeOnlyTheCpusAreWritten) {
  v1::ContainerAllocation shared;
  shared.set_outside_kubelet_tree(true);
  shared.set_cpuset_cpus("0-2");
  shared.set_cpu_shares(2);
  shared.set_cpu_weight(1);
  shared.set_cpu_period_us(100000);
  runtime::v1::LinuxContainerResources r;  // as the client asked
  r.set_cpu_shares(512);
  r.set_cpu_quota(50000);
  r.set_cpu_period(100000);
  r.set_memory_limit_in_bytes(64 << 20);
  const runtime::v1::LinuxContainerResources asked = r;
  applyAllocation(shared, NodeCgroups{true, "0-1"}, r);
  EXPECT_EQ(r.cpuset_cpus(), "0-2");
  EXPECT_EQ(r.cpuset_mems(), "");  // "": the runtime keeps its own
  EXPECT_EQ(r.cpu_shares(), asked.cpu_shares());
  EXPECT_EQ(r.cpu_quota(), asked.cpu_quota());
  EXPECT_EQ(r.memory_limit_in_bytes(), asked.memory_limit_in_bytes());
  EXPECT_THAT(r.unified(), IsEmpty());
}

TEST(CriTranslateTest, ARewrittenRequestKeepsEveryFieldThisProtoDoesNotDeclare) {
  runtime::v1::CreateContainerRequest create = kubeletCreate("/kubepods/poduid-1", 1024, 100000);
  // Fields a newer kubelet might send: at the top, in the config and inside the resources being rewritten.
  create.GetReflection()->MutableUnknownFields(&create)->AddLengthDelimited(99, "top");
  runtime::v1::ContainerConfig& config = *create.mutable_config();
  config.GetReflection()->MutableUnknownFields(&config)->AddVarint(18, 7);  // stop_signal
  runtime::v1::LinuxContainerResources& resources = *config.mutable_linux()->mutable_resources();
  resources.GetReflection()->MutableUnknownFields(&resources)->AddLengthDelimited(40, "future");

  runtime::v1::CreateContainerRequest received;  // as the shim parses kubelet's bytes
  ASSERT_TRUE(received.ParseFromString(create.SerializeAsString()));
  v1::ContainerAllocation allocation;
  allocation.set_cpuset_cpus("1");
  allocation.set_cpu_shares(1024);
  applyAllocation(allocation, NodeCgroups{false, "0"},
                  *received.mutable_config()->mutable_linux()->mutable_resources());
  runtime::v1::CreateContainerRequest sent;  // as containerd parses the shim's bytes
  ASSERT_TRUE(sent.ParseFromString(received.SerializeAsString()));

  const auto& top = sent.GetReflection()->GetUnknownFields(sent);
  ASSERT_EQ(top.field_count(), 1);
  EXPECT_EQ(top.field(0).number(), 99);
  EXPECT_EQ(top.field(0).length_delimited(), "top");
  const auto& in_config = sent.config().GetReflection()->GetUnknownFields(sent.config());
  ASSERT_EQ(in_config.field_count(), 1);
  EXPECT_EQ(in_config.field(0).varint(), 7u);
  const auto& r = sent.config().linux().resources();
  const auto& in_resources = r.GetReflection()->GetUnknownFields(r);
  ASSERT_EQ(in_resources.field_count(), 1);
  EXPECT_EQ(in_resources.field(0).length_delimited(), "future");
  EXPECT_EQ(r.cpuset_cpus(), "1");
}

TEST(CriTranslateTest, AContainerHasFinishedWhenEveryInstanceExitedForGood) {
  using runtime::v1::CONTAINER_EXITED;
  using runtime::v1::CONTAINER_RUNNING;
  const std::vector<SeenContainer> seen = {
      {"setup", "s2", CONTAINER_EXITED, 0},                                           // a completed init container
      {"crashed", "s2", CONTAINER_EXITED, 1},                                         // will be restarted
      {"sidecar", "s2", CONTAINER_RUNNING, 0}, {"old", "s1", CONTAINER_EXITED, 137},  // a replaced sandbox's
      {"both", "s1", CONTAINER_EXITED, 0},     {"both", "s2", CONTAINER_RUNNING, 0},  // runs again in the new sandbox
      {"app", "s2", CONTAINER_EXITED, 0},                                             // the one being created
  };
  EXPECT_THAT(finishedContainers(seen, "app", "s2"), ElementsAre("old", "setup"));
  EXPECT_THAT(finishedContainers({}, "app", "s2"), IsEmpty());
}

}  // namespace
}  // namespace vri::cri

namespace vri {
namespace {

TEST(LedgerSyncTest, TheConfigInContainerdsVerboseStatusIsFound) {
  // The shape of containerd 1.6's PodSandboxStatus info: Go's JSON of its own state, the config among it.
  const std::string info =
      R"({"pid":1234,"processStatus":"running","config":{"metadata":{"name":"web","uid":"u-1","namespace":"shop",)"
      R"("attempt":1},"linux":{"cgroup_parent":"/kubepods/burstable/podu-1","security_context":{"namespace_options":)"
      R"({"network":2}}},"annotations":{"a":"b"}},"runtimeSpec":{"ociVersion":"1.0.2"}})";
  const std::optional<std::string> config = jsonMember(info, "config");
  ASSERT_TRUE(config.has_value());
  runtime::v1::PodSandboxConfig parsed;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*config, &parsed, options).ok()) << *config;
  EXPECT_EQ(parsed.metadata().uid(), "u-1");
  EXPECT_EQ(parsed.metadata().attempt(), 1u);
  EXPECT_EQ(parsed.linux().cgroup_parent(), "/kubepods/burstable/podu-1");
  EXPECT_EQ(parsed.linux().security_context().namespace_options().network(), runtime::v1::NODE);
  EXPECT_FALSE(jsonMember(info, "missing").has_value());
  EXPECT_FALSE(jsonMember("not json", "config").has_value());
}

}  // namespace
}  // namespace vri
