// HandBack (vrictl handback): the node returned to kubelet's static CPU manager. kubelet's
// cpu_manager_state written from the ledger with kubelet's checksum, kubelet's QoS and pod cgroups
// given every CPU while every container keeps its cpuset, and no decision or reconcile after it.
// Refused, changing nothing, while a VM holds exclusive CPUs or kubelet's file holds another
// static checkpoint. The guest's takeover scenario has a real kubelet start on the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/rpc_code.h"
#include "tests/vri/vrid_api_fixture.h"
#include "vri/kubelet_checkpoint.h"
#include "vri/kubelet_memory_checkpoint.h"
#include "vrictl/handback_command.h"

namespace vri::testing {
namespace {

using ::testing::HasSubstr;

class VridHandBackTest : public VridApiTest {
 protected:
  void SetUp() override {
    VridApiTest::SetUp();
    std::filesystem::create_directories(vrid_.config.kubeletRootDir);
  }
  std::string statePath() const { return vrid_.config.kubeletRootDir + "/cpu_manager_state"; }
  std::string memoryStatePath() const { return vrid_.config.kubeletRootDir + "/memory_manager_state"; }
  // The configuration kubelet will start with: the guest's, with both static policies and `extra`.
  std::string kubeletConfig(const std::string& cpuPolicy, const std::string& reservedMemory,
                            const std::string& extra = "") {
    const std::string path = vrid_.config.kubeletRootDir + "/config.yaml";
    std::ofstream(path, std::ios::trunc) << "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                            "kind: KubeletConfiguration\n"
                                            "cpuManagerPolicy: "
                                         << cpuPolicy
                                         << "\n"
                                            "memoryManagerPolicy: Static\n"
                                            "systemReserved: {memory: 256Mi}\n"
                                            "kubeReserved: {memory: 64Mi}\n"
                                            "evictionHard: {memory.available: 100Mi}\n"
                                            "reservedMemory: [{numaNode: 0, limits: {memory: "
                                         << reservedMemory << "}}]\n"
                                         << extra;
    return path;
  }
  std::string fileText(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // As vrictl handback does it: composed by vrid, written by the caller, handed back by vrid.
  grpc::Status handBack(bool dryRun, v1::HandBackReply* reply, bool admin = true,
                        const std::string& kubeletConfig = "") {
    const std::unique_ptr<ctl::VridApi> vrid =
        ctl::connectToVrid(admin ? vrid_.config.adminSocket : vrid_.config.socket);
    Result<v1::HandBackReply> handed =
        ctl::handBackToKubelet(*vrid, {.kubeletRootDir = "", .kubeletConfig = kubeletConfig, .dryRun = dryRun});
    if (!handed.ok())
      return grpc::Status(static_cast<grpc::StatusCode>(toRpcCode(handed.error().code())), handed.error().message());
    *reply = *handed;
    return grpc::Status::OK;
  }
  // A Guaranteed container on two exclusive CPUs and a Burstable one on the shared pool.
  void twoPods() {
    grpc::ClientContext c1, c2;
    v1::ContainerAllocation placed;
    ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 2000, 2000, "c1c1"), &placed).ok());
    ASSERT_TRUE(placed.exclusive());
    exclusive_ = placed.cpuset_cpus();
    ASSERT_TRUE(
        vrid_.admin->AdmitContainer(&c2, container(kUid2, v1::BURSTABLE, 500, 1000, "c2c2", "web"), &placed).ok());
    shared_ = placed.cpuset_cpus();
  }
  std::string exclusive_, shared_;
};

TEST_F(VridHandBackTest, KubeletsCheckpointHoldsWhatTheLedgerHoldsAndItsCgroupsGetEveryCpu) {
  twoPods();
  const std::string guaranteedPod = "kubepods/pod" + std::string(kUid);
  const std::string burstablePod = "kubepods/burstable/pod" + std::string(kUid2);
  ASSERT_EQ(cpus("cpuset", "kubepods/burstable"), shared_);  // VRI narrowed it
  ASSERT_EQ(cpus("cpuset", burstablePod), shared_);

  // A dry run composes the file and changes nothing.
  v1::HandBackReply dry;
  ASSERT_TRUE(handBack(true, &dry).ok());
  EXPECT_EQ(dry.checkpoint_path(), statePath());
  EXPECT_EQ(dry.exclusive_containers(), 1);
  EXPECT_FALSE(std::filesystem::exists(statePath()));
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), shared_);
  auto composed = parseCpuManagerCheckpoint(dry.checkpoint(), "reply");
  ASSERT_TRUE(composed.ok()) << composed.error().message();
  EXPECT_EQ(composed->policyName, "static");
  EXPECT_EQ(composed->entries,
            (std::map<std::string, std::map<std::string, std::string>>{{kUid, {{"app", exclusive_}}}}));
  // Every other online CPU, the reserved one among them: kubelet's static policy shares those too.
  EXPECT_EQ(composed->defaultCpuSet, (*CpuSet::parse("0-7") - *CpuSet::parse(exclusive_)).format());
  EXPECT_EQ(composed->defaultCpuSet, shared_);
  EXPECT_EQ(composed->checksum, kubeletChecksum(*composed));

  v1::HandBackReply handed;
  const grpc::Status status = handBack(false, &handed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(fileText(statePath()), dry.checkpoint());
  EXPECT_EQ(std::filesystem::status(statePath()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  EXPECT_GT(handed.cgroup_writes(), 0);
  for (const std::string& path : {std::string("kubepods"), std::string("kubepods/burstable"),
                                  std::string("kubepods/besteffort"), guaranteedPod, burstablePod})
    EXPECT_EQ(cpus("cpuset", path), "0-7") << path;
  // Containers keep theirs: kubelet writes the same values at its first reconcile.
  EXPECT_EQ(cpus("cpuset", guaranteedPod + "/c1c1"), exclusive_);
  EXPECT_EQ(cpus("cpuset", burstablePod + "/c2c2"), shared_);

  // From now on vrid decides nothing and writes nothing back.
  grpc::ClientContext c1, c2;
  v1::ContainerAllocation placed;
  const grpc::Status refused =
      vrid_.admin->AdmitContainer(&c1, container(kUid2, v1::BURSTABLE, 500, 1000, "c3c3", "side"), &placed);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("handed this node back to kubelet's CPU manager"));
  v1::ReconcileRequest reconcile;
  v1::ReconcileReply reconciled;
  EXPECT_EQ(vrid_.admin->Reconcile(&c2, reconcile, &reconciled).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), "0-7");
  // A second hand-back (the first one's writes failed, or the operator is unsure) finds its own file.
  EXPECT_TRUE(handBack(false, &handed).ok());
}

TEST_F(VridHandBackTest, RefusedWhileAVmHoldsExclusiveCpusOrKubeletHoldsAnotherCheckpoint) {
  twoPods();
  v1::HandBackReply reply;
  EXPECT_EQ(handBack(false, &reply, false).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  grpc::ClientContext c1, c2;
  v1::VmAllocation vmPlaced;
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c1, vm(kVmUuid, "db", 2, v1::DEDICATED), &vmPlaced).ok());
  grpc::Status refused = handBack(false, &reply);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("VMs hold exclusive CPUs: db ("));
  EXPECT_THAT(refused.error_message(), HasSubstr("stop those VMs"));
  v1::ReleaseVmRequest release;
  release.set_uuid(kVmUuid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleaseVm(&c2, release, &released).ok());

  // A static checkpoint of someone else's: kubelet ran with the static policy since.
  std::ofstream(statePath()) << R"({"policyName":"static","defaultCpuSet":"0-7","checksum":14413152})";
  refused = handBack(false, &reply);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("already holds a checkpoint of policy \"static\""));
  EXPECT_EQ(fileText(statePath()), R"({"policyName":"static","defaultCpuSet":"0-7","checksum":14413152})");
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), shared_);
  // kubelet's own file for policy none is replaced.
  std::ofstream(statePath(), std::ios::trunc) << R"({"policyName":"none","defaultCpuSet":"","checksum":1353318690})";
  ASSERT_TRUE(handBack(false, &reply).ok());
  EXPECT_THAT(fileText(statePath()), HasSubstr(R"("policyName":"static")"));
}

// The commit is taken only for the checkpoint the ledger holds now, and found in kubelet's file.
TEST_F(VridHandBackTest, HandedBackOnlyWithTheLedgersCheckpointInKubeletsFile) {
  twoPods();
  const auto commit = [&](const std::string& checkpoint) {
    grpc::ClientContext context;
    v1::HandBackRequest request;
    request.set_checkpoint(checkpoint);
    v1::HandBackReply reply;
    return vrid_.admin->HandBack(&context, request, &reply);
  };
  v1::HandBackReply composed;
  ASSERT_TRUE(handBack(true, &composed).ok());
  // Not written to kubelet's directory yet.
  grpc::Status refused = commit(composed.checkpoint());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::NOT_FOUND) << refused.error_message();
  // A decision came between: the ledger's checkpoint is another.
  grpc::ClientContext c1;
  v1::ReleasePodRequest release;
  release.set_pod_uid(kUid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleasePod(&c1, release, &released).ok());
  std::ofstream(statePath()) << composed.checkpoint();
  refused = commit(composed.checkpoint());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("compose them again"));
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), "0-7");  // the pool, now that kUid's CPUs are back
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable/pod" + std::string(kUid2) + "/c2c2"), "0-7");
  // vrictl's way (which puts back what the file held after a refusal): composed again, written,
  // handed back; the file holds what the ledger holds.
  std::filesystem::remove(statePath());
  v1::HandBackReply handed;
  ASSERT_TRUE(handBack(false, &handed).ok());
  EXPECT_EQ(handed.exclusive_containers(), 0);
  EXPECT_EQ(fileText(statePath()), R"({"policyName":"static","defaultCpuSet":"0-7","checksum":14413152})");
}

// With kubelet's static memory policy in the configuration it will start with, its memory manager's
// checkpoint too: every container of a Guaranteed pod with its memory limit on the NUMA nodes its
// cpuset.mems holds (every node: VRI pins no memory by default), and the machine state kubelet
// computes for the node against that configuration.
TEST_F(VridHandBackTest, WithKubeletsStaticMemoryPolicyItsCheckpointHoldsTheGuaranteedPodsMemory) {
  twoPods();
  v1::HandBackReply handed;
  const grpc::Status status = handBack(false, &handed, true, kubeletConfig("static", "420Mi"));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(handed.memory_checkpoint_path(), memoryStatePath());
  EXPECT_EQ(handed.memory_containers(), 1);
  EXPECT_EQ(fileText(memoryStatePath()), handed.memory_checkpoint());
  auto memory = parseMemoryManagerCheckpoint(fileText(memoryStatePath()), "memory_manager_state");
  ASSERT_TRUE(memory.ok()) << memory.error().message();
  EXPECT_EQ(memory->policyName, "Static");
  ASSERT_EQ(memory->entries.size(), 1u);  // the Burstable pod has none
  EXPECT_TRUE(memory->entries.at(kUid).at("app") ==
              (std::vector<KubeletMemoryBlock>{{{0, 1}, "memory", 256ULL << 20}}));
  const KubeletMemoryTable& reserved = memory->machineState.at(0).memoryMap.at("memory");
  EXPECT_EQ(reserved.systemReserved, 420ULL << 20);
  EXPECT_EQ(reserved.allocatable, reserved.total - (420ULL << 20));
  EXPECT_EQ(reserved.reserved, 256ULL << 20);  // node 0 first, as kubelet fills a group
  for (int numa : {0, 1}) {
    EXPECT_EQ(memory->machineState.at(numa).assignments, 1);
    EXPECT_EQ(memory->machineState.at(numa).cells, (std::vector<int>{0, 1}));
  }
}

class VridHandBackPinnedTest : public VridHandBackTest {
 protected:
  void SetUp() override {
    vrid_.config.pinGuaranteedMemory = true;
    VridHandBackTest::SetUp();
  }
};

// pin_guaranteed_memory: the container's memory on its CPUs' NUMA node, and kubelet's too.
TEST_F(VridHandBackPinnedTest, AContainersPinnedMemoryStaysOnItsNode) {
  twoPods();
  v1::HandBackReply handed;
  const grpc::Status status = handBack(true, &handed, true, kubeletConfig("static", "420Mi"));
  ASSERT_TRUE(status.ok()) << status.error_message();
  auto memory = parseMemoryManagerCheckpoint(handed.memory_checkpoint(), "memory_manager_state");
  ASSERT_TRUE(memory.ok()) << memory.error().message();
  const int numa = CpuSet::parse(exclusive_)->first() < 4 ? 0 : 1;  // CPUs 0-3 on node 0, 4-7 on node 1
  EXPECT_TRUE(memory->entries.at(kUid).at("app") ==
              (std::vector<KubeletMemoryBlock>{{{numa}, "memory", 256ULL << 20}}));
  EXPECT_EQ(memory->machineState.at(numa).memoryMap.at("memory").reserved, 256ULL << 20);
  EXPECT_EQ(memory->machineState.at(numa).assignments, 1);
  EXPECT_EQ(memory->machineState.at(1 - numa).assignments, 0);
  EXPECT_EQ(memory->machineState.at(1 - numa).cells, std::vector<int>{1 - numa});
  EXPECT_FALSE(std::filesystem::exists(memoryStatePath()));  // a dry run
}

// A configuration kubelet would not start on as the hand-back leaves the node is refused, naming
// what to change, and writes nothing.
TEST_F(VridHandBackTest, RefusedForAConfigurationKubeletWouldNotStartOn) {
  twoPods();
  v1::HandBackReply reply;
  grpc::Status refused = handBack(false, &reply, true, kubeletConfig("none", "420Mi"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("says cpuManagerPolicy \"none\""));
  refused = handBack(false, &reply, true, kubeletConfig("static", "100Mi"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("reservedMemory adds up to 100Mi of memory, but its systemReserved, "
                                                 "kubeReserved and evictionHard hold back 420Mi"));
  refused = handBack(false, &reply, true, kubeletConfig("static", "420Mi", "reservedSystemCPUs: " + exclusive_ + "\n"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("hold CPUs that containers hold exclusively: default/0a app"));
  EXPECT_FALSE(std::filesystem::exists(statePath()));
  EXPECT_FALSE(std::filesystem::exists(memoryStatePath()));
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), shared_);
}

}  // namespace
}  // namespace vri::testing
