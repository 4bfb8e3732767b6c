// vrictl's views: a VM with the user's own pins is "pinned", and offline vCPUs say so; the pool
// shows the wide cpuset with cpuset partitions.
#include "vrictl/node_views.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vri::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::VmInfo sparseVm(bool userPins) {
  v1::VmInfo vm;
  vm.set_uuid("5a1f0c3e-2b4d-4e6f-8a9b-0c1d2e3f4a51");
  vm.set_name("sparse");
  vm.mutable_spec()->set_vcpus(2);
  vm.mutable_spec()->set_cpu_policy(v1::SHARED);
  if (userPins) {
    for (int cpu : {-1, -1, 5}) vm.mutable_spec()->add_pinned_vcpu_cpus(cpu);
  }
  for (int cpu : {-1, -1, 5}) vm.mutable_allocation()->add_vcpu_cpus(cpu);
  for (int vcpu : {0, 2}) vm.mutable_allocation()->add_online_vcpus(vcpu);
  vm.mutable_allocation()->set_shared_cpus("0-4");
  return vm;
}

TEST(VrictlFormatTest, AVmWithTheUsersPinsIsPinnedAndItsOfflineVcpusSaySo) {
  v1::TenantList list;
  *list.add_tenants()->mutable_vm() = sparseVm(true);
  *list.add_tenants()->mutable_vm() = sparseVm(false);
  const std::string table = formatTenantList(list);
  EXPECT_THAT(table, HasSubstr("pinned"));
  EXPECT_THAT(table, HasSubstr("shared"));
  const std::string info = formatVmInfo(sparseVm(true));
  EXPECT_THAT(info, HasSubstr("pinned (the domain's own <vcpupin>)"));
  EXPECT_THAT(info, HasSubstr("2 online of 3"));
  EXPECT_THAT(info, HasSubstr("vcpu1"));
  EXPECT_THAT(info, HasSubstr("(offline)"));
  EXPECT_THAT(info, HasSubstr("CPU 5"));
}

TEST(VrictlFormatTest, APodsHugepagesAreShownWithItsMemoryNodes) {
  v1::PodInfo pod;
  pod.set_name("nfv/dpdk");
  v1::ContainerInfo& c = *pod.add_containers();
  c.mutable_resources()->set_name("app");
  c.set_exclusive_cpus("2-3");
  c.set_cpuset_cpus("2-3");
  c.set_cpuset_mems("1");
  for (const auto& [size, bytes] : {std::pair{2ULL << 20, 96ULL << 20}, std::pair{1ULL << 30, 0ULL}}) {
    v1::HugepageLimit& pages = *c.mutable_resources()->add_hugepage_limits();
    pages.set_page_size_bytes(size);
    pages.set_limit_bytes(bytes);
  }
  const std::string info = formatPodInfo(pod);
  EXPECT_THAT(info, HasSubstr("exclusive, mems 1, 96 MiB of 2MiB pages"));
  EXPECT_THAT(info, Not(HasSubstr("1GiB"))) << "a size it may not use is not shown";
}

TEST(VrictlFormatTest, ThePoolShowsTheWideCpusetOnlyWithCpusetPartitions) {
  v1::Node node;
  node.set_reserved_cpus("0");
  node.set_shared_cpus("1,4-7");
  node.set_shared_cpuset("1-7");
  EXPECT_THAT(formatPool(node), Not(HasSubstr("Shared cpuset")));
  node.set_cpuset_partitions(true);
  EXPECT_THAT(formatPool(node), HasSubstr("Shared:                1,4-7 (5 CPUs)"));
  EXPECT_THAT(formatPool(node), HasSubstr("Shared cpuset:         1-7  (with the pod partitions"));
  EXPECT_THAT(formatNodeInfo(node), HasSubstr("Exclusive pod CPUs:    cpuset partitions"));
}

}  // namespace
}  // namespace vri::ctl
