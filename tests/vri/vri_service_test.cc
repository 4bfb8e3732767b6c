// The gRPC service on real unix sockets: an admin socket and a read-only one.
#include "vri/vri_service.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "accounting/hwloc_topology.h"
#include "tests/support/temp_dir.h"

namespace vri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class VriServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto topo = std::make_shared<const Topology>(
        std::move(loadSyntheticTopology("pack:1 numa:1(memory=16GiB) core:4 pu:2")).value());
    LedgerConfig config;
    config.pool.reserved.count = 2;
    config.allocatableMemoryBytes = 8ULL << 30;
    ledger_ = std::move(Ledger::open(topo, config,
                                     std::move(LedgerStore::open(tmp_.sub("ledger.db"), Durability::kNormal)).value()))
                  .value();
    admin_ = start(SocketAccess::kAdmin, tmp_.sub("admin.sock"), admin_service_);
    read_only_ = start(SocketAccess::kReadOnly, tmp_.sub("ro.sock"), read_only_service_);
    admin_stub_ =
        v1::Vri::NewStub(grpc::CreateChannel("unix:" + tmp_.sub("admin.sock"), grpc::InsecureChannelCredentials()));
    read_only_stub_ =
        v1::Vri::NewStub(grpc::CreateChannel("unix:" + tmp_.sub("ro.sock"), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (admin_) admin_->Shutdown();
    if (read_only_) read_only_->Shutdown();
  }

  std::unique_ptr<grpc::Server> start(SocketAccess access, const std::string& socket,
                                      std::unique_ptr<VriService>& service) {
    service = std::make_unique<VriService>(*ledger_, access);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(service.get());
    auto server = builder.BuildAndStart();
    EXPECT_NE(server, nullptr) << "could not listen on " << socket;
    return server;
  }

  static v1::AdmitContainerRequest guaranteed(const std::string& uid, int cpus) {
    v1::AdmitContainerRequest r;
    r.set_pod_uid(uid);
    r.set_pod_name("default/" + uid);
    r.set_qos(v1::GUARANTEED);
    r.set_container_name("app");
    r.set_container_id("abc123");
    r.set_cpu_request_milli(cpus * 1000);
    r.set_cpu_limit_milli(cpus * 1000);
    r.set_memory_limit_bytes(1ULL << 30);
    return r;
  }

  testing::TempDir tmp_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<VriService> admin_service_, read_only_service_;
  std::unique_ptr<grpc::Server> admin_, read_only_;
  std::unique_ptr<v1::Vri::Stub> admin_stub_, read_only_stub_;
};

TEST_F(VriServiceTest, AdmitsIdempotentlyOverTheAdminSocket) {
  v1::ContainerAllocation first, again;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(admin_stub_->AdmitContainer(&c1, guaranteed("p1", 2), &first).ok());
  EXPECT_TRUE(first.exclusive());
  EXPECT_EQ(CpuSet::parse(first.cpuset_cpus())->count(), 2);
  ASSERT_TRUE(admin_stub_->AdmitContainer(&c2, guaranteed("p1", 2), &again).ok());
  EXPECT_EQ(again.cpuset_cpus(), first.cpuset_cpus());
  v1::Node node;
  grpc::ClientContext c3;
  ASSERT_TRUE(read_only_stub_->GetNode(&c3, v1::GetNodeRequest(), &node).ok());  // reads are open to all
  EXPECT_EQ(node.online_cpus(), 8);
  EXPECT_EQ(node.reserved_cpus(), "0-1");
  EXPECT_EQ(node.exclusive_cpus().at(containerOwner("p1", "app")), first.cpuset_cpus());
}

TEST_F(VriServiceTest, TheReadOnlySocketRefusesChanges) {
  v1::ContainerAllocation reply;
  grpc::ClientContext context;
  const grpc::Status status = read_only_stub_->AdmitContainer(&context, guaranteed("p1", 2), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(status.error_message(), HasSubstr("use the admin socket"));
  EXPECT_TRUE(ledger_->snapshot().pods.empty());
}

TEST_F(VriServiceTest, ErrorsCarryTheRightCodesAndReasons) {
  v1::ContainerAllocation reply;
  grpc::ClientContext c1, c2, c3, c4;
  auto bad = guaranteed("../../etc", 1);
  EXPECT_EQ(admin_stub_->AdmitContainer(&c1, bad, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  auto no_qos = guaranteed("p2", 1);
  no_qos.set_qos(v1::QOS_UNSPECIFIED);
  const grpc::Status qos = admin_stub_->AdmitContainer(&c2, no_qos, &reply);
  EXPECT_EQ(qos.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(qos.error_message(), HasSubstr("qos:"));
  const grpc::Status too_big = admin_stub_->AdmitContainer(&c3, guaranteed("p3", 8), &reply);
  EXPECT_EQ(too_big.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(too_big.error_message(), HasSubstr("need 8 exclusive CPUs; 6 are free"));
  v1::ReleasePodRequest release;
  release.set_pod_uid("nobody");
  v1::Released released;
  EXPECT_EQ(admin_stub_->ReleasePod(&c4, release, &released).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(VriServiceTest, AdmitsAVmWithItsVcpuMap) {
  v1::AdmitVmRequest vm;
  vm.set_uuid("7d7e0a2e-0000-4000-8000-000000000001");
  vm.set_name("web01");
  vm.set_vcpus(2);
  vm.set_cpu_policy(v1::DEDICATED);
  vm.set_memory_bytes(1ULL << 30);
  v1::VmAllocation reply;
  grpc::ClientContext c1, c2;
  ASSERT_TRUE(admin_stub_->AdmitVm(&c1, vm, &reply).ok());
  ASSERT_EQ(reply.vcpu_cpus_size(), 2);
  EXPECT_EQ(CpuSet::parse(reply.exclusive_cpus())->count(), 2);
  EXPECT_EQ(reply.cpuset_mems(), "0");
  v1::ReleaseVmRequest release;
  release.set_uuid(vm.uuid());
  v1::Released released;
  EXPECT_TRUE(admin_stub_->ReleaseVm(&c2, release, &released).ok());
  EXPECT_TRUE(ledger_->snapshot().vms.empty());
}

}  // namespace
}  // namespace vri
