// kubelet's CPU manager checkpoint: the checksums are go-spew's and FNV-32a's, as kubelet 1.35
// computes them (each vector below printed by go-spew with kubelet's configuration for the same
// checkpoint); the guest's takeover scenario has a real kubelet start on a file VRI wrote.
#include "vri/kubelet_checkpoint.h"

#include <gmock/gmock.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

CpuManagerCheckpoint staticCheckpoint(std::string defaultCpus,
                                      std::map<std::string, std::map<std::string, std::string>> entries) {
  CpuManagerCheckpoint cp;
  cp.policyName = "static";
  cp.defaultCpuSet = std::move(defaultCpus);
  cp.entries = std::move(entries);
  return cp;
}

TEST(KubeletCheckpointTest, ChecksumsAreKubeletsOwn) {
  CpuManagerCheckpoint none;
  none.policyName = "none";
  EXPECT_EQ(kubeletChecksum(none), 1353318690u);  // what kubelet with policy none writes on every node
  EXPECT_EQ(kubeletChecksum(staticCheckpoint("0-7", {})), 14413152u);
  EXPECT_EQ(kubeletChecksum(staticCheckpoint("0,3", {{"3f1c1d7e-aaaa-4bbb-8ccc-123456789abc", {{"app", "1-2"}}}})),
            2256934842u);
  // What kubelet 1.35 wrote in the guest's takeover scenario for a static pod on CPU 1.
  EXPECT_EQ(kubeletChecksum(staticCheckpoint("0,2-3", {{"f12031115293cafe62c34285dc103d2e", {{"app", "1"}}}})),
            2805366700u);
  // Pods and containers in byte order, as go-spew sorts string keys.
  EXPECT_EQ(
      kubeletChecksum(staticCheckpoint("0-1,6-7", {{"b-pod", {{"z", "5"}, {"a", "4"}}}, {"a-pod", {{"main", "2-3"}}}})),
      1662970070u);
}

TEST(KubeletCheckpointTest, TheFileIsWhatKubeletWrites) {
  EXPECT_EQ(encodeCheckpoint(staticCheckpoint("0-7", {})),
            R"({"policyName":"static","defaultCpuSet":"0-7","checksum":14413152})");  // empty entries left out
  EXPECT_EQ(encodeCheckpoint(
                staticCheckpoint("0-1,6-7", {{"b-pod", {{"z", "5"}, {"a", "4"}}}, {"a-pod", {{"main", "2-3"}}}})),
            R"({"policyName":"static","defaultCpuSet":"0-1,6-7","entries":{"a-pod":{"main":"2-3"},)"
            R"("b-pod":{"a":"4","z":"5"}},"checksum":1662970070})");
}

TEST(KubeletCheckpointTest, ReadsBackWhatItWritesAndWhatKubeletWrites) {
  const CpuManagerCheckpoint written = staticCheckpoint("0-1,6-7", {{"a-pod", {{"main", "2-3"}}}});
  auto read = parseCpuManagerCheckpoint(encodeCheckpoint(written), "cpu_manager_state");
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->policyName, "static");
  EXPECT_EQ(read->defaultCpuSet, "0-1,6-7");
  EXPECT_EQ(read->entries, written.entries);
  EXPECT_EQ(read->checksum, kubeletChecksum(written));
  // kubelet's for policy none, and a checksum of 0, which kubelet accepts for older files.
  EXPECT_TRUE(parseCpuManagerCheckpoint(R"({"policyName":"none","defaultCpuSet":"","checksum":1353318690})", "f").ok());
  EXPECT_TRUE(parseCpuManagerCheckpoint(R"({"policyName":"static","defaultCpuSet":"0-3","checksum":0})", "f").ok());
}

TEST(KubeletCheckpointTest, AWrongChecksumOrShapeIsRefusedAsKubeletRefusesIt) {
  const auto refusal = [](const std::string& text) {
    auto read = parseCpuManagerCheckpoint(text, "cpu_manager_state");
    return read.ok() ? std::string("accepted") : read.error().message();
  };
  EXPECT_THAT(refusal(R"({"policyName":"static","defaultCpuSet":"0-6","checksum":14413152})"),
              HasSubstr("its checksum 14413152 is not its contents'"));
  EXPECT_THAT(refusal(R"({"policyName":"static","defaultCpuSet":"0-7","checksum":"x"})"),
              HasSubstr("is not a whole number"));
  EXPECT_THAT(refusal(R"({"policyName":"static","entries":{"pod":"1-2"},"checksum":0})"),
              HasSubstr("entries of pod \"pod\" is not an object"));
  EXPECT_THAT(refusal("[1, 2]"), HasSubstr("want a JSON object"));
  EXPECT_THAT(refusal("{\"policyName\": "), HasSubstr("not JSON"));
  auto policy = checkpointPolicyName(R"({"policyName":"Static","machineState":{"0":{}},"checksum":1})", "m");
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(*policy, "Static");
}

}  // namespace
}  // namespace vri
