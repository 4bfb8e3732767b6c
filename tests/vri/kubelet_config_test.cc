// kubelet's configuration file as vrid reads it: kubelet's defaults where the
// file is silent, each differing setting named, and files that are not a
// KubeletConfiguration refused with the reason.
#include "vri/kubelet_config.h"

#include <gmock/gmock.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "tests/support/temp_dir.h"
#include "tests/support/test_paths.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kHeader[] = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";

std::string readData(const std::string& name) {
  std::ifstream in(std::string(VRI_TEST_DATA_DIR) + "/" + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// vrid's settings that agree with tests/data/kubelet/config.yaml.
DaemonConfig agreeingWithTestData() {
  DaemonConfig config = defaultConfig();
  EXPECT_TRUE(setConfigOption(config, "system_reserved_cpu", "0.5").ok());  // the file's 500m, written otherwise
  EXPECT_TRUE(setConfigOption(config, "system_reserved_memory", "256Mi").ok());
  EXPECT_TRUE(setConfigOption(config, "kube_reserved_memory", "64Mi").ok());
  EXPECT_TRUE(setConfigOption(config, "eviction_hard_memory", "100Mi").ok());
  return config;
}

std::vector<std::string> mismatches(const DaemonConfig& config, const std::string& body) {
  auto kubelet = parseKubeletConfig(kHeader + body, "config.yaml");
  EXPECT_TRUE(kubelet.ok()) << kubelet.error().message();
  return kubelet.ok() ? kubeletMismatches(config, *kubelet) : std::vector<std::string>{"unparsed"};
}

TEST(KubeletConfigTest, TheFileTheGuestsKubeletRunsWithAgreesWithTheSettingsWrittenForIt) {
  auto kubelet = parseKubeletConfig(readData("kubelet/config.yaml"), "config.yaml");
  ASSERT_TRUE(kubelet.ok()) << kubelet.error().message();
  EXPECT_EQ(kubelet->systemReservedCpu, *Quantity::parse("500m"));
  EXPECT_EQ(kubelet->systemReservedMemory, *Quantity::parse("256Mi"));
  EXPECT_THAT(kubeletMismatches(agreeingWithTestData(), *kubelet), IsEmpty());
  // vrid's defaults do not: kubelet reserves no CPU for the system unless told, vrid one.
  EXPECT_THAT(kubeletMismatches(defaultConfig(), *kubelet),
              ElementsAre("kubelet's systemReserved.cpu is 500m, vrid's system_reserved_cpu is 1",
                          "kubelet's systemReserved.memory is 256Mi, vrid's system_reserved_memory is 0",
                          "kubelet's kubeReserved.memory is 64Mi, vrid's kube_reserved_memory is 0"));
}

TEST(KubeletConfigTest, WhatTheFileLeavesOutIsKubeletsDefault) {
  DaemonConfig config = defaultConfig();
  EXPECT_THAT(mismatches(config, ""),
              ElementsAre("kubelet's systemReserved.cpu is 0, vrid's system_reserved_cpu is 1"));
  ASSERT_TRUE(setConfigOption(config, "system_reserved_cpu", "0").ok());
  EXPECT_THAT(mismatches(config, ""), IsEmpty());  // eviction 100Mi, policies none, scope container, root /
  ASSERT_TRUE(setConfigOption(config, "eviction_hard_memory", "200Mi").ok());
  EXPECT_THAT(mismatches(config, ""),
              ElementsAre("kubelet's evictionHard memory.available is 100Mi (kubelet's default), vrid's "
                          "eviction_hard_memory is 200Mi"));
  // An evictionHard without memory.available replaces kubelet's whole default map.
  EXPECT_THAT(mismatches(config, "evictionHard:\n  nodefs.available: 5%\n"),
              ElementsAre("kubelet's evictionHard memory.available is unset, vrid's eviction_hard_memory is 200Mi"));
  ASSERT_TRUE(setConfigOption(config, "eviction_hard_memory", "100Mi").ok());
  EXPECT_THAT(mismatches(config, "mergeDefaultEvictionSettings: true\nevictionHard:\n  nodefs.available: 5%\n"),
              IsEmpty());
}

TEST(KubeletConfigTest, EverySettingThatDiffersIsNamedWithBothValues) {
  DaemonConfig config = defaultConfig();
  ASSERT_TRUE(setConfigOption(config, "system_reserved_cpu", "0").ok());
  ASSERT_TRUE(setConfigOption(config, "reserved_cpus", "0-1").ok());
  ASSERT_TRUE(setConfigOption(config, "kubelet_cgroup_root", "/kube").ok());
  const std::vector<std::string> got =
      mismatches(config,
                 "reservedSystemCPUs: \"0,2\"\n"
                 "kubeReserved: {memory: 1Gi}\n"
                 "evictionHard: {memory.available: 5%}\n"
                 "cpuManagerPolicy: static\n"
                 "memoryManagerPolicy: Static\n"
                 "topologyManagerPolicy: single-numa-node\n"
                 "topologyManagerScope: pod\n"
                 "topologyManagerPolicyOptions: {prefer-closest-numa-nodes: \"true\"}\n"
                 "cgroupsPerQOS: false\n"
                 "cgroupRoot: /kube/\n");  // the same root, a slash longer
  EXPECT_THAT(
      got,
      ElementsAre(
          "kubelet's reservedSystemCPUs is 0,2, vrid's reserved_cpus is 0-1",
          "kubelet's kubeReserved.memory is 1Gi, vrid's kube_reserved_memory is 0",
          "kubelet's evictionHard memory.available is 5%, a share of the node's memory: vrid's eviction_hard_memory is "
          "an amount; give kubelet one",
          "kubelet's cpuManagerPolicy is \"static\": VRI places the CPUs, so kubelet's must be none",
          "kubelet's memoryManagerPolicy is \"Static\": VRI places NUMA memory, so kubelet's must be None",
          "kubelet's topologyManagerPolicy is \"single-numa-node\", vrid's topology_manager_policy is none",
          "kubelet's topologyManagerScope is \"pod\", vrid's topology_manager_scope is container",
          "kubelet's topologyManagerPolicyOptions prefer-closest-numa-nodes is true, vrid's prefer_closest_numa_nodes "
          "is false",
          "kubelet's cgroupsPerQOS is false: VRI places pods in kubelet's QoS cgroups, so it must be true"));
}

TEST(KubeletConfigTest, JsonIsReadAsKubeletReadsIt) {
  DaemonConfig config = defaultConfig();
  ASSERT_TRUE(setConfigOption(config, "system_reserved_cpu", "250m").ok());
  auto kubelet = parseKubeletConfig(
      R"({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
          "systemReserved": {"cpu": "250m"}, "topologyManagerPolicy": "none"})",
      "config.json");
  ASSERT_TRUE(kubelet.ok()) << kubelet.error().message();
  EXPECT_THAT(kubeletMismatches(config, *kubelet), IsEmpty());
}

// reservedMemory, which the static memory manager's checkpoint is computed against (vrictl handback).
TEST(KubeletConfigTest, ReservedMemoryIsReadPerNumaNodeAndResource) {
  auto kubelet = parseKubeletConfig(std::string(kHeader) +
                                        "reservedMemory:\n"
                                        "  - numaNode: 0\n"
                                        "    limits: {memory: 420Mi, hugepages-2Mi: 4Mi}\n"
                                        "  - numaNode: 1\n"
                                        "    limits: {memory: \"1073741824\"}\n",
                                    "config.yaml");
  ASSERT_TRUE(kubelet.ok()) << kubelet.error().message();
  EXPECT_EQ(kubelet->reservedMemory,
            (KubeletReservedMemory{{0, {{"memory", 420ULL << 20}, {"hugepages-2Mi", 4ULL << 20}}},
                                   {1, {{"memory", 1ULL << 30}}}}));
  for (const char* wrong :
       {"reservedMemory: {numaNode: 0}\n", "reservedMemory: [{numaNode: 0}]\n",
        "reservedMemory: [{numaNode: -1, limits: {memory: 1Mi}}]\n",
        "reservedMemory: [{numaNode: 0, limits: {cpu: 1}}]\n", "reservedMemory: [{numaNode: 0, limits: {memory: 0}}]\n",
        "reservedMemory: [{numaNode: 0, limits: {memory: 1Mi}}, {numaNode: 0, limits: {memory: 1Mi}}]\n"})
    EXPECT_FALSE(parseKubeletConfig(std::string(kHeader) + wrong, "config.yaml").ok()) << wrong;
}

TEST(KubeletConfigTest, WhatIsNotAKubeletConfigurationIsRefusedWithTheReason) {
  const auto refusal = [](const std::string& text) {
    auto parsed = parseKubeletConfig(text, "/etc/kubelet.yaml");
    return parsed.ok() ? std::string("accepted") : parsed.error().message();
  };
  EXPECT_THAT(refusal("a: [b"), HasSubstr("/etc/kubelet.yaml: not YAML"));
  EXPECT_THAT(refusal("- a\n- b\n"), HasSubstr("want a KubeletConfiguration"));
  EXPECT_THAT(refusal("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n"),
              HasSubstr("kind is not KubeletConfiguration"));
  EXPECT_THAT(refusal("apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n"),
              HasSubstr("apiVersion is not kubelet.config.k8s.io/v1beta1"));
  EXPECT_THAT(refusal(std::string(kHeader) + "reservedSystemCPUs: 3-1\n"), HasSubstr("reservedSystemCPUs"));
  EXPECT_THAT(refusal(std::string(kHeader) + "systemReserved: {cpu: lots}\n"), HasSubstr("systemReserved.cpu"));
  EXPECT_THAT(refusal(std::string(kHeader) + "systemReserved: 1\n"), HasSubstr("systemReserved: want a map"));
  EXPECT_THAT(refusal(std::string(kHeader) + "cpuManagerPolicy: [none]\n"),
              HasSubstr("cpuManagerPolicy: want a single value"));
  EXPECT_THAT(refusal(std::string(kHeader) + "cgroupsPerQOS: maybe\n"), HasSubstr("cgroupsPerQOS: want true or false"));
  EXPECT_THAT(refusal(std::string(2 << 20, '#')), HasSubstr("larger than"));
  // kubelet takes a repeated key's last value, yaml-cpp's lookup its first: refused, at any depth.
  EXPECT_THAT(refusal(std::string(kHeader) + "cpuManagerPolicy: none\ncpuManagerPolicy: static\n"),
              HasSubstr("\"cpuManagerPolicy\" is given twice"));
  EXPECT_THAT(refusal(std::string(kHeader) + "systemReserved: {cpu: 500m, cpu: '2'}\n"),
              HasSubstr("\"systemReserved.cpu\" is given twice"));
}

// Read as vrid's own configuration is: a regular file of bounded size that only root may change.
TEST(KubeletConfigTest, OnlyARegularFileOfBoundedSizeThatOnlyRootMayChangeIsRead) {
  testing::TempDir tmp;
  DaemonConfig config = agreeingWithTestData();
  const auto refusal = [&](const std::string& path) {
    config.kubeletConfig = path;
    auto checked = checkKubeletConfig(config);
    return checked.ok() ? std::string("accepted") : checked.error().message();
  };
  const std::string good = tmp.sub("config.yaml");
  std::ofstream(good) << readData("kubelet/config.yaml");
  ASSERT_EQ(refusal(good), "accepted");

  // A device that never ends and a FIFO nobody writes: refused at once, neither read nor waited on.
  ASSERT_EQ(::symlink("/dev/zero", tmp.sub("zero.yaml").c_str()), 0);
  EXPECT_THAT(refusal(tmp.sub("zero.yaml")), HasSubstr("is a character device"));
  ASSERT_EQ(::mkfifo(tmp.sub("fifo.yaml").c_str(), 0600), 0);
  EXPECT_THAT(refusal(tmp.sub("fifo.yaml")), HasSubstr("is a FIFO"));
  EXPECT_THAT(refusal(tmp.path()), HasSubstr("kubelet_config"));

  const std::string big = tmp.sub("big.yaml");
  std::ofstream(big) << std::string(2 << 20, '#');
  EXPECT_THAT(refusal(big), HasSubstr("larger than the 1048576 bytes accepted"));

  ASSERT_EQ(::chmod(good.c_str(), 0666), 0);
  EXPECT_THAT(refusal(good), HasSubstr("may be written by everyone"));
  ASSERT_EQ(::chmod(good.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0777), 0);
  EXPECT_THAT(refusal(good), HasSubstr("kubelet_config's directory"));
  ASSERT_EQ(::chmod(tmp.path().c_str(), 0700), 0);
  EXPECT_EQ(refusal(good), "accepted");
}

TEST(KubeletConfigTest, AFileThatCannotBeReadIsNamed) {
  DaemonConfig config = defaultConfig();
  EXPECT_TRUE(checkKubeletConfig(config).ok()) << "no kubelet_config: nothing read";
  testing::TempDir tmp;
  config.kubeletConfig = tmp.sub("absent.yaml");
  auto checked = checkKubeletConfig(config);
  ASSERT_FALSE(checked.ok());
  EXPECT_THAT(checked.error().message(), HasSubstr("kubelet_config"));
  EXPECT_THAT(checked.error().message(), HasSubstr(tmp.sub("absent.yaml")));
}

}  // namespace
}  // namespace vri
