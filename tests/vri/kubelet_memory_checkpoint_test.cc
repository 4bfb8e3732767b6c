// kubelet's memory manager checkpoint: the machine state is the one kubelet's static policy computes
// at start (policy_static.go getDefaultMachineState and validateState), the checksum the one it
// verifies; the guest's takeover scenario has a real kubelet start on a file VRI wrote.
#include "vri/kubelet_memory_checkpoint.h"

#include <gmock/gmock.h>

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kGiB = 1ULL << 30;

NumaNode node(int id, uint64_t memory, std::map<uint64_t, uint64_t> hugepages = {}) {
  NumaNode n;
  n.id = id;
  n.memoryBytes = memory;
  n.hugepages = std::move(hugepages);
  return n;
}

TEST(KubeletMemoryCheckpointTest, TheMachineStateIsKubeletsForTheNodeAndItsReservation) {
  // MemTotal includes the hugepage pools; regular memory's allocatable is what is left of it.
  auto state =
      kubeletMachineState({node(0, 4 * kGiB, {{2 * kMiB, 64}, {kGiB, 0}})}, {{0, {{"memory", 420 * kMiB}}}}, {});
  ASSERT_TRUE(state.ok()) << state.error().message();
  const KubeletNumaNodeState& n0 = state->at(0);
  EXPECT_EQ(n0.assignments, 0);
  EXPECT_EQ(n0.cells, std::vector<int>{0});
  EXPECT_EQ(n0.memoryMap.at("memory"), (KubeletMemoryTable{4 * kGiB, 420 * kMiB, 4 * kGiB - 420 * kMiB - 128 * kMiB, 0,
                                                           4 * kGiB - 420 * kMiB - 128 * kMiB}));
  EXPECT_EQ(n0.memoryMap.at("hugepages-2Mi"), (KubeletMemoryTable{128 * kMiB, 0, 128 * kMiB, 0, 128 * kMiB}));
  EXPECT_EQ(n0.memoryMap.at("hugepages-1Gi"), (KubeletMemoryTable{}));  // a pool with no pages is still one
}

TEST(KubeletMemoryCheckpointTest, EntriesFillTheirGroupInOrderAndCountEveryBlockOnEveryNode) {
  const std::vector<NumaNode> nodes = {node(0, kGiB), node(1, kGiB), node(2, kGiB)};
  KubeletMemoryAssignments entries;
  entries["pod-a"]["app"] = {{{0}, "memory", 256 * kMiB}};
  // 1.5 GiB over nodes 1 and 2: node 1 full, half of node 2.
  entries["pod-b"]["db"] = {{{1, 2}, "memory", kGiB + 512 * kMiB}};
  auto state = kubeletMachineState(nodes, {}, entries);
  ASSERT_TRUE(state.ok()) << state.error().message();
  EXPECT_EQ(state->at(0).memoryMap.at("memory"), (KubeletMemoryTable{kGiB, 0, kGiB, 256 * kMiB, 768 * kMiB}));
  EXPECT_EQ(state->at(1).memoryMap.at("memory"), (KubeletMemoryTable{kGiB, 0, kGiB, kGiB, 0}));
  EXPECT_EQ(state->at(2).memoryMap.at("memory"), (KubeletMemoryTable{kGiB, 0, kGiB, 512 * kMiB, 512 * kMiB}));
  EXPECT_EQ(state->at(0).assignments, 1);
  EXPECT_EQ(state->at(1).assignments, 1);
  EXPECT_EQ(state->at(2).assignments, 1);
  EXPECT_EQ(state->at(0).cells, std::vector<int>{0});
  EXPECT_EQ(state->at(1).cells, (std::vector<int>{1, 2}));
  EXPECT_EQ(state->at(2).cells, (std::vector<int>{1, 2}));
}

TEST(KubeletMemoryCheckpointTest, WhatKubeletWouldRefuseIsRefused) {
  const std::vector<NumaNode> nodes = {node(0, kGiB), node(1, kGiB)};
  KubeletMemoryAssignments twoGroups;
  twoGroups["pod-a"]["app"] = {{{0}, "memory", kMiB}};
  twoGroups["pod-b"]["db"] = {{{0, 1}, "memory", kMiB}};
  auto refused = kubeletMachineState(nodes, {}, twoGroups);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("NUMA node 0 is in two"));
  EXPECT_THAT(refused.error().message(), HasSubstr("pod pod-b container \"db\" holds memory on nodes 0,1"));

  KubeletMemoryAssignments noSuchPool;
  noSuchPool["pod-a"]["app"] = {{{0}, "hugepages-1Gi", kGiB}};
  refused = kubeletMachineState(nodes, {}, noSuchPool);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error().message(), HasSubstr("NUMA node 0 has no hugepages-1Gi"));

  KubeletMemoryAssignments noSuchNode;
  noSuchNode["pod-a"]["app"] = {{{3}, "memory", kMiB}};
  EXPECT_THAT(kubeletMachineState(nodes, {}, noSuchNode).error().message(), HasSubstr("NUMA node 3"));
  EXPECT_THAT(kubeletMachineState(nodes, {{2, {{"memory", kMiB}}}}, {}).error().message(),
              HasSubstr("reservedMemory names NUMA node 2"));
  EXPECT_THAT(kubeletMachineState(nodes, {{0, {{"memory", 2 * kGiB}}}}, {}).error().message(),
              HasSubstr("reservedMemory takes"));
}

TEST(KubeletMemoryCheckpointTest, TheFileIsWhatKubeletWritesAndReadsBack) {
  MemoryManagerCheckpoint cp;
  cp.policyName = "Static";
  cp.entries["f1"]["app"] = {{{0}, "memory", 32 * kMiB}};
  cp.machineState = *kubeletMachineState({node(0, kGiB, {{2 * kMiB, 0}})}, {{0, {{"memory", 100 * kMiB}}}}, cp.entries);
  const std::string text = encodeMemoryCheckpoint(cp);
  EXPECT_EQ(text, R"({"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{)"
                  R"("hugepages-2Mi":{"total":0,"systemReserved":0,"allocatable":0,"reserved":0,"free":0},)"
                  R"("memory":{"total":1073741824,"systemReserved":104857600,"allocatable":968884224,)"
                  R"("reserved":33554432,"free":935329792}},"cells":[0]}},)"
                  R"("entries":{"f1":{"app":[{"numaAffinity":[0],"type":"memory","size":33554432}]}},"checksum":)" +
                      std::to_string(memoryManagerChecksum(cp)) + "}");
  auto read = parseMemoryManagerCheckpoint(text, "memory_manager_state");
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->policyName, "Static");
  EXPECT_EQ(read->machineState, cp.machineState);
  EXPECT_EQ(read->entries, cp.entries);
  EXPECT_EQ(read->checksum, memoryManagerChecksum(cp));
}

// What kubelet 1.35 wrote in the guest's takeover scenario (two NUMA nodes with a 2 MiB pool each,
// 420Mi reserved on node 0, one 32 MiB Guaranteed container): read back with kubelet's checksum, and
// the machine state is what kubeletMachineState computes for the same node and entry.
TEST(KubeletMemoryCheckpointTest, KubeletsOwnFileIsReadAndItsMachineStateIsOurs) {
  const std::string written =
      R"({"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"hugepages-2Mi":)"
      R"({"total":67108864,"systemReserved":0,"allocatable":67108864,"reserved":0,"free":67108864},"memory":)"
      R"({"total":2005757952,"systemReserved":440401920,"allocatable":1498247168,"reserved":33554432,)"
      R"("free":1464692736}},"cells":[0]},"1":{"numberOfAssignments":0,"memoryMap":{"hugepages-2Mi":)"
      R"({"total":67108864,"systemReserved":0,"allocatable":67108864,"reserved":0,"free":67108864},"memory":)"
      R"({"total":2112360448,"systemReserved":0,"allocatable":2045251584,"reserved":0,"free":2045251584}},)"
      R"("cells":[1]}},"entries":{"f12031115293cafe62c34285dc103d2e":{"app":[{"numaAffinity":[0],)"
      R"("type":"memory","size":33554432}]}},"checksum":923481451})";
  auto read = parseMemoryManagerCheckpoint(written, "memory_manager_state");
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->checksum, 923481451u);
  EXPECT_EQ(memoryManagerChecksum(*read), 923481451u);
  auto state = kubeletMachineState({node(0, 2005757952, {{2 * kMiB, 32}}), node(1, 2112360448, {{2 * kMiB, 32}})},
                                   {{0, {{"memory", 420 * kMiB}}}}, read->entries);
  ASSERT_TRUE(state.ok()) << state.error().message();
  EXPECT_EQ(*state, read->machineState);
  EXPECT_EQ(encodeMemoryCheckpoint(*read), written);  // byte for byte as kubelet writes it
  // What kubelet with policy None writes on every node (the same run, after the takeover).
  MemoryManagerCheckpoint none;
  none.policyName = "None";
  EXPECT_EQ(memoryManagerChecksum(none), 4236770233u);
  EXPECT_EQ(encodeMemoryCheckpoint(none), R"({"policyName":"None","machineState":{},"checksum":4236770233})");
}

TEST(KubeletMemoryCheckpointTest, AWrongChecksumOrShapeIsRefusedAsKubeletRefusesIt) {
  auto corrupted = parseMemoryManagerCheckpoint(R"({"policyName":"None","machineState":{},"checksum":1})", "f");
  ASSERT_FALSE(corrupted.ok());
  EXPECT_EQ(corrupted.error().code(), ErrorCode::kDataLoss);
  EXPECT_THAT(corrupted.error().message(), HasSubstr("kubelet refuses it as corrupted"));
  EXPECT_FALSE(parseMemoryManagerCheckpoint(R"({"policyName":"Static","machineState":[1]})", "f").ok());
  EXPECT_FALSE(parseMemoryManagerCheckpoint(R"({"policyName":"Static","machineState":{"x":{}}})", "f").ok());
  EXPECT_FALSE(
      parseMemoryManagerCheckpoint(R"({"policyName":"Static","machineState":{},"entries":{"p":{"c":{}}}})", "f").ok());
  EXPECT_FALSE(parseMemoryManagerCheckpoint("not json", "f").ok());
}

}  // namespace
}  // namespace vri
