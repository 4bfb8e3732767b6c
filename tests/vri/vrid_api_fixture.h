// The fixture of the API suites: a whole vrid in the test process
// (DaemonHarness), its admin and read-only stubs, and requests to send it.
#pragma once

#include <gmock/gmock.h>

#include <string>

#include "tests/vri/daemon_harness.h"

namespace vri::testing {

inline constexpr char kUid[] = "0b1c2d3e-0000-4000-8000-00000000000a";
inline constexpr char kUid2[] = "0b1c2d3e-0000-4000-8000-00000000000b";
inline constexpr char kVmUuid[] = "7d7e0a2e-0000-4000-8000-000000000001";
inline constexpr char kAppId[] = "a1b2c3";

inline v1::AdmitContainerRequest container(const std::string& uid, v1::Qos qos, int64_t request, int64_t limit,
                                           const std::string& id = kAppId, const std::string& name = "app") {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(uid);
  r.set_pod_name("default/" + uid.substr(uid.size() - 2));
  r.set_qos(qos);
  r.set_container_name(name);
  r.set_container_id(id);
  r.set_cpu_request_milli(request);
  r.set_cpu_limit_milli(limit);
  r.set_memory_limit_bytes(limit > 0 ? 256ULL << 20 : 0);
  return r;
}

inline v1::AdmitVmRequest vm(const std::string& uuid, const std::string& name, int vcpus, v1::VmCpuPolicy policy) {
  v1::AdmitVmRequest r;
  r.set_uuid(uuid);
  r.set_name(name);
  r.set_vcpus(vcpus);
  r.set_cpu_policy(policy);
  r.set_memory_bytes(512ULL << 20);
  return r;
}

class VridApiTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(vrid_.start()); }

  v1::Node node() {
    grpc::ClientContext context;
    v1::Node reply;
    EXPECT_TRUE(vrid_.readOnly->GetNode(&context, {}, &reply).ok());
    return reply;
  }
  std::string cpus(const std::string& hierarchy, const std::string& path) {
    auto value = vrid_.fs().read(CgroupDir{hierarchy, *CgroupPath::parse(path)}, "cpuset.cpus");
    return value.ok() ? *value : "<" + value.error().message() + ">";
  }
  // A Burstable pod as the CRI shim records it: with its sandbox bound.
  bool admitShimPod(const std::string& uid, const std::string& sandbox) {
    grpc::ClientContext context;
    v1::AdmitPodRequest pod;
    pod.set_pod_uid(uid);
    pod.set_qos(v1::BURSTABLE);
    pod.set_sandbox_id(sandbox);
    v1::PodAllocation admitted;
    return vrid_.admin->AdmitPod(&context, pod, &admitted).ok();
  }
  void fakeQemu(const std::string& scope, int pid, const std::string& uuid, int vcpus) {
    vrid_.fakeQemu(scope, pid, uuid, vcpus);
  }

  DaemonHarness vrid_;
};

}  // namespace vri::testing
