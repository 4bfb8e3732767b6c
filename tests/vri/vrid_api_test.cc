// Every RPC of a whole in-process vrid over real unix sockets: happy paths,
// refusals with their codes and fields, the access rule, events, reconcile,
// health, hostile bytes, and a restart with live tenants.
#include <gmock/gmock.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "base/version.h"
#include "proto/grpc_health_v1.grpc.pb.h"
#include "tests/support/eventually.h"
#include "tests/vri/vrid_api_fixture.h"
#include "vri/vri_service.h"

namespace vri {
namespace {

using testing::container;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kAppId;
using testing::kUid;
using testing::kUid2;
using testing::kVmUuid;
using testing::vm;
using testing::VridApiTest;

TEST_F(VridApiTest, NodeReportsTopologyCapacityPoolsAndOptions) {
  const v1::Node n = node();
  EXPECT_EQ(n.online_cpus(), 8);
  EXPECT_EQ(n.numa_nodes(), 2);
  EXPECT_EQ(n.numa_size(), 2);
  EXPECT_EQ(n.reserved_cpus(), "0");  // system_reserved_cpu 1: one CPU, chosen as kubelet does
  EXPECT_EQ(n.shared_cpus(), "0-7");
  EXPECT_EQ(n.capacity_cpu_milli(), 8000);
  EXPECT_EQ(n.allocatable_cpu_milli(), 7000);
  EXPECT_EQ(n.capacity_memory_bytes(), 16ULL << 30);
  EXPECT_EQ(n.allocatable_memory_bytes(), (16ULL << 30) - (100ULL << 20));
  EXPECT_EQ(n.options().at("topology_manager_policy"), "none");
  EXPECT_EQ(n.options().at("ownership"), "everything");
  // What the shim writes must match them, and it asks vrid instead of probing.
  EXPECT_EQ(n.cgroup_version(), "v1");
  EXPECT_EQ(n.cgroup_driver(), "cgroupfs");
}

TEST_F(VridApiTest, NodeReportsVridsVersionAndEachClientsFromItsUserAgent) {
  EXPECT_EQ(node().version(), packageVersion());
  EXPECT_EQ(node().clients_size(), 0);  // the harness's stubs send gRPC's own user agent only
  grpc::ChannelArguments args;
  args.SetUserAgentPrefix("vri-hook/9.9.9-1");
  auto hook = v1::Vri::NewStub(
      grpc::CreateCustomChannel("unix:" + vrid_.config.adminSocket, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext context;
  v1::ReleaseVmRequest release;
  release.set_uuid(kVmUuid);
  v1::Released released;
  hook->ReleaseVm(&context, release, &released);  // any call counts, answered or refused
  const v1::Node n = node();
  ASSERT_EQ(n.clients_size(), 1);
  EXPECT_EQ(n.clients(0).program(), "vri-hook");
  EXPECT_EQ(n.clients(0).version(), "9.9.9-1");
  EXPECT_LT(n.clients(0).seconds_since_last_call(), 60);

  // On the read-only socket anyone may call as anything: neither a forged version of a real program
  // nor a crowd of invented ones is recorded, and the real hook is still recorded when it next calls.
  for (int i = 0; i < 20; ++i) {
    grpc::ChannelArguments forged;
    forged.SetUserAgentPrefix(i == 0 ? "vri-hook/6.6.6-6"
                                     : "vri-" + std::string(1, static_cast<char>('a' + i)) + "/1.0");
    auto stub = v1::Vri::NewStub(
        grpc::CreateCustomChannel("unix:" + vrid_.config.socket, grpc::InsecureChannelCredentials(), forged));
    grpc::ClientContext forged_context;
    v1::Node ignored;
    ASSERT_TRUE(stub->GetNode(&forged_context, {}, &ignored).ok());
  }
  const v1::Node after = node();
  ASSERT_EQ(after.clients_size(), 1);
  EXPECT_EQ(after.clients(0).version(), "9.9.9-1");
}

TEST_F(VridApiTest, ExclusiveAdmitShrinksTheSharedPoolInTheCgroupsAndIsIdempotent) {
  grpc::ClientContext c1, c2, c3;
  v1::ContainerAllocation shared, first, again;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid2, v1::BURSTABLE, 500, 1000, "b0b0"), &shared).ok());
  EXPECT_EQ(shared.cpuset_cpus(), "0-7");
  EXPECT_EQ(shared.cpu_shares(), 512u);
  EXPECT_EQ(shared.cpu_quota_us(), 100000);
  EXPECT_EQ(shared.cgroup_path(), std::string("/kubepods/burstable/pod") + kUid2 + "/b0b0");
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c2, container(kUid, v1::GUARANTEED, 2000, 2000), &first).ok());
  EXPECT_TRUE(first.exclusive());
  ASSERT_EQ(CpuSet::parse(first.cpuset_cpus())->count(), 2);
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c3, container(kUid, v1::GUARANTEED, 2000, 2000), &again).ok());
  EXPECT_EQ(again.cpuset_cpus(), first.cpuset_cpus());
  // The answer counts the files written for it: at least the three below; the retry wrote none.
  EXPECT_GE(first.cgroup_writes(), 3);
  EXPECT_EQ(again.cgroup_writes(), 0);

  const CpuSet exclusive = *CpuSet::parse(first.cpuset_cpus());
  const std::string rest = (*CpuSet::parse("0-7") - exclusive).format();
  EXPECT_EQ(node().shared_cpus(), rest);
  // Written before the answer: the container's own cgroup and the shared tenant's, shrunk.
  EXPECT_EQ(cpus("cpuset", std::string("kubepods/pod") + kUid + "/" + kAppId), first.cpuset_cpus());
  EXPECT_EQ(cpus("cpuset", std::string("kubepods/burstable/pod") + kUid2 + "/b0b0"), rest);
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), rest);
}

TEST_F(VridApiTest, ReadOnlySocketAnswersReadsAndRefusesEveryChange) {
  grpc::ClientContext c1, c2, c3, c4, c5;
  v1::ContainerAllocation allocation;
  const grpc::Status admit =
      vrid_.readOnly->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 1000, 1000), &allocation);
  EXPECT_EQ(admit.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(admit.error_message(), HasSubstr("admin socket"));
  v1::Released released;
  v1::ReleaseVmRequest release;
  release.set_uuid(kVmUuid);
  EXPECT_EQ(vrid_.readOnly->ReleaseVm(&c2, release, &released).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::ReconcileRequest repair;
  v1::ReconcileReply report;
  EXPECT_EQ(vrid_.readOnly->Reconcile(&c3, repair, &report).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  repair.set_dry_run(true);  // a dry run only reports: vrictl reads it there
  EXPECT_TRUE(vrid_.readOnly->Reconcile(&c4, repair, &report).ok());
  v1::TenantList list;
  EXPECT_TRUE(vrid_.readOnly->ListTenants(&c5, {}, &list).ok());
  EXPECT_EQ(list.tenants_size(), 0);
  EXPECT_EQ(node().exclusive_cpus_size(), 0);
}

TEST_F(VridApiTest, RefusalsUseTheRightCodeNameTheFieldAndChangeNothing) {
  const int writes_before = vrid_.fs().writes();
  const auto call = [&](const v1::AdmitContainerRequest& r) {
    grpc::ClientContext context;
    v1::ContainerAllocation reply;
    return vrid_.admin->AdmitContainer(&context, r, &reply);
  };
  grpc::Status s = call(container("../../etc", v1::GUARANTEED, 1000, 1000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("pod_uid"));
  s = call(container(kUid, v1::QOS_UNSPECIFIED, 1000, 1000));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("qos"));
  s = call(container(kUid, v1::BURSTABLE, 1000, 500));
  EXPECT_THAT(s.error_message(), HasSubstr("cpu_limit_milli"));
  s = call(container(kUid, v1::BURSTABLE, 100, 0, "../x"));
  EXPECT_THAT(s.error_message(), HasSubstr("container_id"));
  // Names reach every listing and the operator's terminal: bounded, and without control characters.
  s = call(container(kUid, v1::BURSTABLE, 100, 0, kAppId, std::string(513, 'n')));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("container name: longer than 512 bytes"));
  for (const std::string& hostile : {std::string("app\x1b[2J"), std::string("app\nforged line"),
                                     std::string("app\xc2\x9b"
                                                 "31m")}) {
    s = call(container(kUid, v1::BURSTABLE, 100, 0, kAppId, hostile));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("container name: control character"));
  }
  {
    grpc::ClientContext context;
    v1::VmAllocation placed;
    s = vrid_.admin->AdmitVm(&context, vm(kVmUuid, "web\x1b]0;owned\x07", 1, v1::SHARED), &placed);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("name: <name>: control character"));
  }
  s = call(container(kUid, v1::GUARANTEED, 8000, 8000));  // CPU 0 is reserved
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), ::testing::ContainsRegex("[0-9]"));

  grpc::ClientContext c1, c2, c3, c4;
  v1::Released released;
  v1::ReleaseContainerRequest release;
  release.set_pod_uid(kUid);
  release.set_container_name("app");
  EXPECT_EQ(vrid_.admin->ReleaseContainer(&c1, release, &released).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::VmAllocation placed;
  v1::AdmitVmRequest bad = vm(kVmUuid, "web", 0, v1::DEDICATED);
  s = vrid_.admin->AdmitVm(&c2, bad, &placed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("vcpus"));
  bad = vm("../../etc", "web", 1, v1::DEDICATED);
  EXPECT_THAT(vrid_.admin->AdmitVm(&c3, bad, &placed).error_message(), HasSubstr("uuid"));
  v1::GetTenantRequest get;
  get.set_vm("nosuch");
  v1::Tenant tenant;
  EXPECT_EQ(vrid_.readOnly->GetTenant(&c4, get, &tenant).error_code(), grpc::StatusCode::NOT_FOUND);

  EXPECT_EQ(vrid_.fs().writes(), writes_before);
  EXPECT_EQ(node().shared_cpus(), "0-7");
  EXPECT_EQ(node().pods(), 0);
}

TEST_F(VridApiTest, AContainerNameOfTheLongestLengthTakenIsTaken) {
  grpc::ClientContext context;
  v1::ContainerAllocation reply;
  EXPECT_TRUE(
      vrid_.admin
          ->AdmitContainer(&context, container(kUid, v1::BURSTABLE, 100, 0, kAppId, std::string(512, 'n')), &reply)
          .ok());
}

TEST_F(VridApiTest, AFailedCgroupWriteUndoesTheAdmit) {
  // Something that is not a cgroup sits where the container's cgroup goes: mkdir fails.
  ASSERT_TRUE(vrid_.fs().mkdir({"cpuset", *CgroupPath::parse(std::string("kubepods/pod") + kUid)}).ok());
  std::ofstream(vrid_.tmp().sub("fx/cgroup/cpuset/kubepods/pod") + kUid + "/" + kAppId) << "in the way";
  grpc::ClientContext context;
  v1::ContainerAllocation reply;
  const grpc::Status s = vrid_.admin->AdmitContainer(&context, container(kUid, v1::GUARANTEED, 2000, 2000), &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(s.error_message(), HasSubstr("nothing was changed"));
  EXPECT_EQ(node().shared_cpus(), "0-7");
  EXPECT_EQ(node().exclusive_cpus_size(), 0);
  EXPECT_EQ(cpus("cpuset", "kubepods/burstable"), "0-7");
}

TEST_F(VridApiTest, PodAdmissionResizeAndRelease) {
  v1::AdmitPodRequest pod;
  pod.set_pod_uid(kUid);
  pod.set_pod_name("default/web");
  pod.set_cgroup_parent(std::string("/kubepods/burstable/pod") + kUid);  // the QoS comes from here
  v1::ContainerResources& c = *pod.add_containers();
  c.set_name("web");
  c.set_id("feed01");
  c.set_cpu_request_milli(250);
  grpc::ClientContext c1, c2, c3, c4, c5;
  v1::PodAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitPod(&c1, pod, &placed).ok());
  EXPECT_EQ(placed.cgroup_path(), std::string("/kubepods/burstable/pod") + kUid);
  ASSERT_EQ(placed.containers_size(), 1);
  EXPECT_EQ(placed.containers(0).cpu_shares(), 256u);
  pod.set_cgroup_parent("/kubepods/besteffort/pod" + std::string(kUid2));
  const grpc::Status wrong = vrid_.admin->AdmitPod(&c2, pod, &placed);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(wrong.error_message(), HasSubstr("cgroup_parent"));

  // A resize names a container and keeps its pod's class: no QoS outside the enum, no other class,
  // no request that names no container at all; each refused before anything changes.
  v1::ContainerAllocation resized;
  for (const auto& [qos, message] :
       std::vector<std::pair<int, std::string>>{{77, "qos: must be GUARANTEED, BURSTABLE or BEST_EFFORT"},
                                                {v1::GUARANTEED, "does not change a pod's QoS class"}}) {
    v1::AdmitContainerRequest hostile = container(kUid, v1::BURSTABLE, 4000, 4000, "feed01", "web");
    hostile.set_qos(static_cast<v1::Qos>(qos));
    grpc::ClientContext context;
    const grpc::Status refused = vrid_.admin->ResizeContainer(&context, hostile, &resized);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << qos;
    EXPECT_THAT(refused.error_message(), HasSubstr(message));
  }
  {
    v1::AdmitContainerRequest nameless;
    nameless.set_cpu_request_milli(100);
    grpc::ClientContext context;
    const grpc::Status refused = vrid_.admin->ResizeContainer(&context, nameless, &resized);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(refused.error_message(), HasSubstr("container_id: must not be empty"));
  }
  const StatePtr unchanged = vrid_.daemon().node().state();
  EXPECT_EQ(unchanged->pod(kUid)->containers.at("web").spec.cpuRequestMilli, 250);

  v1::AdmitContainerRequest grow = container(kUid, v1::BURSTABLE, 750, 0, "feed01", "web");
  ASSERT_TRUE(vrid_.admin->ResizeContainer(&c3, grow, &resized).ok());
  EXPECT_EQ(resized.cpu_shares(), 768u);
  v1::GetTenantRequest get;
  get.set_pod_uid(kUid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c4, get, &tenant).ok());
  EXPECT_EQ(tenant.pod().containers(0).resources().cpu_request_milli(), 750);
  v1::ReleasePodRequest release;
  release.set_pod_uid(kUid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleasePod(&c5, release, &released).ok());
  EXPECT_EQ(node().pods(), 0);
  EXPECT_FALSE(vrid_.fs().exists({"cpuset", *CgroupPath::parse(std::string("kubepods/burstable/pod") + kUid)}));
}

TEST_F(VridApiTest, DedicatedVmIsPlacedThenPinnedWhenItStarts) {
  grpc::ClientContext c1, c2, c3, c4, c5, c6, c7;
  v1::VmAllocation placed, again;
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c1, vm(kVmUuid, "web", 2, v1::DEDICATED), &placed).ok());
  ASSERT_EQ(placed.vcpu_cpus_size(), 2);
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c2, vm(kVmUuid, "web", 2, v1::DEDICATED), &again).ok());
  EXPECT_EQ(again.exclusive_cpus(), placed.exclusive_cpus());

  const std::string scope = "machine/qemu-1-web.libvirt-qemu";
  fakeQemu(scope, 4242, kVmUuid, 2);
  v1::VmStartedRequest started;
  started.set_uuid(kVmUuid);
  started.set_qemu_pid(4242);
  v1::VmStartedReply where;
  ASSERT_TRUE(vrid_.admin->VmStarted(&c3, started, &where).ok());
  EXPECT_EQ(where.scope(), scope);
  EXPECT_GT(where.cgroup_writes(), 0);
  EXPECT_EQ(cpus("cpuset", scope + "/vcpu0"), std::to_string(placed.vcpu_cpus(0)));
  EXPECT_EQ(cpus("cpuset", scope + "/vcpu1"), std::to_string(placed.vcpu_cpus(1)));
  EXPECT_EQ(cpus("cpuset", scope + "/emulator"), placed.shared_cpus());

  v1::GetTenantRequest get;
  get.set_vm("web");
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c4, get, &tenant).ok());
  EXPECT_EQ(tenant.vm().uuid(), kVmUuid);
  EXPECT_EQ(tenant.vm().scope(), scope);
  v1::ListTenantsRequest pods_only;
  pods_only.set_kind(v1::ListTenantsRequest::PODS);
  v1::TenantList list;
  ASSERT_TRUE(vrid_.readOnly->ListTenants(&c5, pods_only, &list).ok());
  EXPECT_EQ(list.tenants_size(), 0);

  started.set_uuid("7d7e0a2e-0000-4000-8000-0000000000ff");
  EXPECT_EQ(vrid_.admin->VmStarted(&c6, started, &where).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::ReleaseVmRequest release;
  release.set_uuid(kVmUuid);
  v1::Released released;
  ASSERT_TRUE(vrid_.admin->ReleaseVm(&c7, release, &released).ok());
  EXPECT_EQ(node().shared_cpus(), "0-7");
}

TEST_F(VridApiTest, ReservedVmHoldsItsCpusUntilAdmitted) {
  grpc::ClientContext c1, c2;
  v1::VmAllocation reserved, admitted;
  ASSERT_TRUE(vrid_.admin->ReserveVm(&c1, vm(kVmUuid, "db", 2, v1::DEDICATED), &reserved).ok());
  EXPECT_EQ(CpuSet::parse(node().shared_cpus())->count(), 6);
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c2, vm(kVmUuid, "db", 2, v1::DEDICATED), &admitted).ok());
  EXPECT_EQ(admitted.exclusive_cpus(), reserved.exclusive_cpus());
}

// Each stream holds one of its socket's server threads: the read-only socket serves a bounded number
// at once and refuses the next at once, while the admin socket decides as before and the read-only
// socket's unary calls answer; a slot freed is taken again.
TEST_F(VridApiTest, ReadOnlyStreamsAreBoundedAndNeverTakeTheAdminSocketsCalls) {
  ASSERT_TRUE(admitShimPod(kUid, "sandbox-1"));  // an event each stream is sent first
  struct Held {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::Event>> stream;
  };
  std::vector<std::unique_ptr<Held>> held;
  const auto open = [&] {
    auto h = std::make_unique<Held>();
    h->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::WatchRequest request;
    request.set_recent(1);
    h->stream = vrid_.readOnly->Watch(&h->context, request);
    v1::Event first;
    const bool serving = h->stream->Read(&first);  // the handler runs: its slot is taken
    held.push_back(std::move(h));
    return serving;
  };
  for (size_t i = 0; i < VriService::kMaxReadOnlyStreams; ++i) ASSERT_TRUE(open()) << "stream " << i;
  ASSERT_FALSE(open());
  const grpc::Status refused = held.back()->stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("serves 8 streams at once"));
  held.pop_back();

  // Decisions and reads go on.
  grpc::ClientContext c1, c2;
  v1::ContainerAllocation placed;
  EXPECT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid2, v1::GUARANTEED, 1000, 1000), &placed).ok());
  v1::Node n;
  EXPECT_TRUE(vrid_.readOnly->GetNode(&c2, {}, &n).ok());

  // One stream ends: the next one is served.
  held.front()->context.TryCancel();
  held.front()->stream->Finish();
  held.erase(held.begin());
  EXPECT_TRUE(testing::eventually([&] {
    if (open()) return true;
    held.pop_back();
    return false;
  }));
  for (auto& h : held) {
    h->context.TryCancel();
    h->stream->Finish();
  }
}

// The read-only socket's scans wait their turn off the decision thread, a few at most: the rest are
// refused at once, every one that waited is answered, and admin decisions go on meanwhile.
TEST_F(VridApiTest, ReadOnlyScansWaitTheirTurnAFewAtMost) {
  constexpr int kScans = 12;
  std::vector<grpc::Status> answers(kScans);
  std::vector<std::thread> scanners;
  for (int i = 0; i < kScans; ++i) {
    scanners.emplace_back([&, i] {
      grpc::ClientContext context;
      v1::ReconcileRequest dry;
      dry.set_dry_run(true);
      v1::ReconcileReply report;
      answers[i] = vrid_.readOnly->Reconcile(&context, dry, &report);
    });
  }
  grpc::ClientContext admit_context;
  v1::ContainerAllocation placed;
  EXPECT_TRUE(vrid_.admin->AdmitContainer(&admit_context, container(kUid, v1::GUARANTEED, 1000, 1000), &placed).ok());
  for (std::thread& t : scanners) t.join();
  int answered = 0, refused = 0;
  for (const grpc::Status& status : answers) {
    if (status.ok()) {
      ++answered;
    } else {
      ++refused;
      EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
      EXPECT_THAT(status.error_message(), HasSubstr("scans already wait their turn"));
    }
  }
  EXPECT_GE(answered, 1);
  EXPECT_LE(answered, kScans);
  EXPECT_EQ(answered + refused, kScans);
  // Root's admin socket is not paced: its dry runs are answered as they come.
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    v1::ReconcileRequest dry;
    dry.set_dry_run(true);
    v1::ReconcileReply report;
    EXPECT_TRUE(vrid_.admin->Reconcile(&context, dry, &report).ok());
  }
}

TEST_F(VridApiTest, WatchStreamsDecisionsAndPoolChanges) {
  grpc::ClientContext watch_context;
  watch_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));  // no read hangs forever
  auto stream = vrid_.readOnly->Watch(&watch_context, {});
  std::mutex mutex;
  std::vector<v1::Event> events;
  std::thread reader([&] {
    v1::Event event;
    while (stream->Read(&event)) {
      std::lock_guard lock(mutex);
      events.push_back(event);
    }
  });
  const auto seen = [&](const std::function<bool(const v1::Event&)>& match) {
    std::lock_guard lock(mutex);
    return std::any_of(events.begin(), events.end(), match);
  };
  // The subscription exists once the server runs the call: refused probes until the first one comes through.
  const std::string probe = "pod/0e000000-0000-4000-8000-00000000beef";
  ASSERT_TRUE(testing::eventually([&] {
    grpc::ClientContext context;
    v1::ReleasePodRequest release;
    release.set_pod_uid(probe.substr(4));
    v1::Released released;
    (void)vrid_.admin->ReleasePod(&context, release, &released);
    return seen([&](const v1::Event& e) { return e.tenant() == probe; });
  }));
  grpc::ClientContext c1, c2;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 1000, 1000), &placed).ok());
  ASSERT_FALSE(vrid_.admin->AdmitContainer(&c2, container(kUid2, v1::GUARANTEED, 9000, 9000), &placed).ok());
  const auto ours = [&] {
    std::lock_guard lock(mutex);
    std::vector<v1::Event> out;
    for (const v1::Event& e : events) {
      if (e.tenant() != probe) out.push_back(e);
    }
    return out;
  };
  ASSERT_TRUE(testing::eventually([&] { return ours().size() >= 3; }));
  watch_context.TryCancel();
  reader.join();
  const std::vector<v1::Event> got = ours();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].kind(), v1::Event::SHARED_POOL_CHANGED);
  EXPECT_EQ(got[1].kind(), v1::Event::ADMITTED);
  EXPECT_EQ(got[1].tenant(), std::string("pod/") + kUid + "/app");
  EXPECT_EQ(got[2].kind(), v1::Event::REFUSED);
  EXPECT_LT(got[0].sequence(), got[2].sequence());
}

TEST_F(VridApiTest, ReconcileRepairsAHandWrittenCpusetAndSaysSo) {
  grpc::ClientContext c1, c2, c3;
  v1::ContainerAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::BURSTABLE, 100, 0, "cafe"), &placed).ok());
  const std::string path = std::string("kubepods/burstable/pod") + kUid + "/cafe";
  ASSERT_EQ(cpus("cpuset", path), "0-7");
  ASSERT_TRUE(vrid_.fs().write({"cpuset", *CgroupPath::parse(path)}, "cpuset.cpus", "3").ok());
  v1::ReconcileRequest dry;
  dry.set_dry_run(true);
  v1::ReconcileReply report;
  ASSERT_TRUE(vrid_.admin->Reconcile(&c2, dry, &report).ok());
  EXPECT_THAT(report.drift(), Contains(HasSubstr("cafe")));
  EXPECT_EQ(cpus("cpuset", path), "3");  // a dry run writes nothing
  ASSERT_TRUE(vrid_.admin->Reconcile(&c3, {}, &report).ok());
  EXPECT_THAT(report.operations(), Contains(HasSubstr("cafe")));
  EXPECT_EQ(cpus("cpuset", path), "0-7");
}

TEST_F(VridApiTest, ServesHealth) {
  auto health = grpc::health::v1::Health::NewStub(testing::DaemonHarness::channel(vrid_.config.socket));
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckResponse status;
  ASSERT_TRUE(health->Check(&context, {}, &status).ok());
  EXPECT_EQ(status.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(VridApiTest, SurvivesOversizedMessagesAndGarbageBytes) {
  grpc::ClientContext c1;
  v1::AdmitContainerRequest huge = container(kUid, v1::BURSTABLE, 100, 0);
  huge.set_pod_name(std::string(2 << 20, 'x'));
  v1::ContainerAllocation reply;
  EXPECT_EQ(vrid_.admin->AdmitContainer(&c1, huge, &reply).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  for (const std::string& bytes : {std::string("GET / HTTP/1.1\r\n\r\n"), std::string(1 << 16, '\xff'),
                                   std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + std::string(4096, '\x01')}) {
    for (const std::string& socket : {vrid_.config.socket, vrid_.config.adminSocket}) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::snprintf(address.sun_path, sizeof address.sun_path, "%s", socket.c_str());
      ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
      (void)!::write(fd, bytes.data(), bytes.size());
      ::close(fd);
    }
  }
  EXPECT_EQ(node().online_cpus(), 8);
  grpc::ClientContext c2;
  EXPECT_TRUE(vrid_.admin->AdmitContainer(&c2, container(kUid, v1::BURSTABLE, 100, 0), &reply).ok());
}

TEST_F(VridApiTest, RestartKeepsEveryPlacementOfLiveTenants) {
  grpc::ClientContext c1, c2, c3, c4;
  v1::ContainerAllocation exclusive, shared;
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c1, container(kUid, v1::GUARANTEED, 2000, 2000), &exclusive).ok());
  ASSERT_TRUE(vrid_.admin->AdmitContainer(&c2, container(kUid2, v1::BURSTABLE, 300, 0, "beef"), &shared).ok());
  v1::VmAllocation placed;
  ASSERT_TRUE(vrid_.admin->AdmitVm(&c3, vm(kVmUuid, "web", 1, v1::DEDICATED), &placed).ok());
  fakeQemu("machine/qemu-1-web.libvirt-qemu", 4343, kVmUuid, 1);
  v1::VmStartedRequest started;
  started.set_uuid(kVmUuid);
  started.set_qemu_pid(4343);
  v1::VmStartedReply where;
  ASSERT_TRUE(vrid_.admin->VmStarted(&c4, started, &where).ok());
  const v1::Node before = node();

  ASSERT_TRUE(vrid_.restart());
  const v1::Node after = node();
  EXPECT_EQ(after.shared_cpus(), before.shared_cpus());
  using Owners = std::map<std::string, std::string>;
  const Owners owners_after(after.exclusive_cpus().begin(), after.exclusive_cpus().end());
  const Owners owners_before(before.exclusive_cpus().begin(), before.exclusive_cpus().end());
  EXPECT_EQ(owners_after, owners_before);
  EXPECT_EQ(owners_after.size(), 2u);
  EXPECT_EQ(after.pods(), 2);
  EXPECT_EQ(after.vms(), 1);
  grpc::ClientContext c5;
  v1::GetTenantRequest get;
  get.set_vm(kVmUuid);
  v1::Tenant tenant;
  ASSERT_TRUE(vrid_.readOnly->GetTenant(&c5, get, &tenant).ok());
  EXPECT_EQ(tenant.vm().scope(), "machine/qemu-1-web.libvirt-qemu");  // found again through its process
  EXPECT_EQ(tenant.vm().allocation().exclusive_cpus(), placed.exclusive_cpus());
}

}  // namespace
}  // namespace vri
