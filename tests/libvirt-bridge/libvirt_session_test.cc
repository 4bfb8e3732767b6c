// The libvirt session and vrid's libvirt side against libvirt's own test
// driver (test:///default: a running domain "test", no daemon, no cgroups).
// The real libvirtd with QEMU is tests/libvirt/.
#include "libvirt-bridge/libvirt_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "libvirt-bridge/domain_xml.h"
#include "tests/support/eventually.h"
#include "tests/support/manual_clock.h"
#include "tests/vri/daemon_harness.h"

namespace vri {
namespace {

using ::testing::HasSubstr;

constexpr char kTestDomainUuid[] = "6695eb01-f6a4-8304-79aa-97f2502e193f";

class RecordingHandler : public LibvirtHandler {
 public:
  void connected(LibvirtSession&) override { ++connects; }
  void domainEvent(LibvirtSession&, const DomainEvent& event) override {
    std::lock_guard lock(mutex);
    events.push_back(event);
  }
  std::atomic<int> connects{0};
  std::mutex mutex;
  std::vector<DomainEvent> events;
};

using testing::eventually;

// Runs `task` on the session's worker thread and waits for it.
template <typename T>
T onWorker(LibvirtSession& session, std::function<T(LibvirtSession&)> task) {
  std::promise<T> result;
  session.post([&](LibvirtSession& s) { result.set_value(task(s)); });
  return result.get_future().get();
}

TEST(LibvirtSessionTest, ConnectsListsPinsAndDefines) {
  RecordingHandler handler;
  LibvirtSessionOptions options;
  options.uri = "test:///default";
  auto session = LibvirtSession::start(options, handler);
  ASSERT_TRUE(eventually([&] { return handler.connects == 1; }));
  EXPECT_TRUE(session->isConnected());

  auto xmls = onWorker<Result<std::vector<std::string>>>(*session, [](auto& s) { return s.activeDomainXmls(); });
  ASSERT_TRUE(xmls.ok()) << xmls.error().message();
  ASSERT_EQ(xmls->size(), 1u);
  auto domain = parseDomainXml(xmls->front());
  ASSERT_TRUE(domain.ok()) << domain.error().message();
  EXPECT_EQ(domain->uuid, kTestDomainUuid);

  VmPins pins{{{0, CpuSet{1}}, {1, CpuSet{0}}}, CpuSet{0, 1}, {}, {}, {}, {}, false, {}};
  auto pinned = onWorker<Result<void>>(*session, [&](auto& s) { return s.pinLive(kTestDomainUuid, pins); });
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  auto live = onWorker<Result<std::string>>(*session, [](auto& s) { return s.domainXml(kTestDomainUuid, false); });
  ASSERT_TRUE(live.ok());
  auto reread = parseDomainXml(*live);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(reread->cputune.vcpupins.at(0).format(), "1");
  EXPECT_EQ(reread->cputune.vcpupins.at(1).format(), "0");

  const std::string fresh =
      "<domain type='test'><name>vri-test-defined</name><uuid>0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d</uuid>"
      "<memory>1048576</memory><vcpu>1</vcpu><os><type>hvm</type></os></domain>";
  auto defined = onWorker<Result<void>>(*session, [&](auto& s) { return s.define(fresh); });
  ASSERT_TRUE(defined.ok()) << defined.error().message();
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(handler.mutex);
    return !handler.events.empty();
  }));
  std::lock_guard lock(handler.mutex);
  EXPECT_EQ(handler.events.front().kind, DomainEventKind::kDefined);
  EXPECT_EQ(handler.events.front().name, "vri-test-defined");
  auto missing = onWorker<Result<bool>>(*session, [](auto& s) { return s.isActive("00000000-0000-4000-8000-0"); });
  EXPECT_FALSE(missing.ok());
}

TEST(LibvirtSessionTest, KeepsRetryingAnUnreachableDaemonAndStopsPromptly) {
  RecordingHandler handler;
  std::vector<std::string> lines;
  std::mutex lines_mutex;
  LibvirtSessionOptions options;
  options.uri = "qemu+unix:///system?socket=/nonexistent/libvirt-sock";
  options.firstRetry = std::chrono::milliseconds(20);
  options.log = [&](const std::string& line) {
    std::lock_guard lock(lines_mutex);
    lines.push_back(line);
  };
  auto session = LibvirtSession::start(options, handler);
  ASSERT_TRUE(testing::eventually([&] { return session->attempts() >= 3; }));  // it keeps retrying
  EXPECT_FALSE(session->isConnected());
  EXPECT_EQ(handler.connects, 0);
  const auto begin = std::chrono::steady_clock::now();
  session.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
  std::lock_guard lock(lines_mutex);
  ASSERT_EQ(lines.size(), 1u);  // said once, not on every retry
  EXPECT_THAT(lines.front(), HasSubstr("cannot connect to qemu+unix:///system"));
}

TEST(LibvirtSessionTest, BacksOffDoublingUpToTheLimitOnItsClock) {
  RecordingHandler handler;
  testing::ManualClock clock;
  LibvirtSessionOptions options;
  options.uri = "qemu+unix:///system?socket=/nonexistent/libvirt-sock";
  options.firstRetry = std::chrono::seconds(1);
  options.maxRetry = std::chrono::seconds(4);
  options.clock = &clock;
  auto session = LibvirtSession::start(options, handler);
  // Attempts at 0, 1, 3, 7, 11, 15 s: each second, the count must be exactly what the back-off allows.
  const std::map<int, int> attempts_by = {{0, 1}, {1, 2},  {2, 2},  {3, 3},  {4, 3}, {6, 3},
                                          {7, 4}, {10, 4}, {11, 5}, {14, 5}, {15, 6}};
  int second = 0;
  for (const auto& step : attempts_by) {
    const int at = step.first, expected = step.second;  // (clang 14's lambdas cannot capture bindings)
    clock.advance(std::chrono::seconds(at - second));
    second = at;
    ASSERT_TRUE(testing::eventually([&] { return session->attempts() >= expected; })) << "at " << at << " s";
    // The worker waits for the next attempt before the clock moves again.
    ASSERT_TRUE(testing::eventually([&] { return clock.nextDeadline().has_value(); })) << "at " << at << " s";
    EXPECT_EQ(session->attempts(), expected) << "at " << at << " s";
  }
}

TEST(LibvirtSyncTest, VridAdoptsTheRunningDomainsItFindsOnConnect) {
  testing::DaemonHarness vrid;
  vrid.config.libvirtUri = "test:///default";
  vrid.config.libvirtPidDir = vrid.tmp().sub("no-pids");
  ASSERT_TRUE(vrid.start());
  v1::Tenant tenant;
  ASSERT_TRUE(eventually([&] {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm("test");
    return vrid.readOnly->GetTenant(&context, request, &tenant).ok();
  }));
  EXPECT_EQ(tenant.vm().uuid(), kTestDomainUuid);
  EXPECT_EQ(tenant.vm().spec().vcpus(), 2);
  EXPECT_EQ(tenant.vm().spec().cpu_policy(), v1::SHARED);
  EXPECT_EQ(tenant.vm().spec().memory_bytes(), 8ULL << 30);
  ASSERT_TRUE(vrid.restart());  // and again after a restart, admitted once
  v1::TenantList tenants;
  EXPECT_TRUE(eventually([&] {
    grpc::ClientContext context;
    v1::ListTenantsRequest list;
    list.set_kind(v1::ListTenantsRequest::VMS);
    return vrid.readOnly->ListTenants(&context, list, &tenants).ok() && tenants.tenants_size() > 0;
  }));
  EXPECT_EQ(tenants.tenants_size(), 1);
}

// A live move through vrid's libvirt side on libvirt's test driver: the call answers once libvirt holds the
// pins, and the live XML then carries them and VRI's record (the request as the ledger holds it now).
TEST(LibvirtSyncTest, AMoveAnswersOnceLibvirtHoldsThePinsAndVrisRecordOfThem) {
  testing::DaemonHarness vrid;
  vrid.config.libvirtUri = "test:///default";
  vrid.config.libvirtPidDir = vrid.tmp().sub("no-pids");
  ASSERT_TRUE(vrid.start());
  ASSERT_TRUE(eventually([&] {
    grpc::ClientContext context;
    v1::GetTenantRequest request;
    request.set_vm("test");
    v1::Tenant tenant;
    return vrid.readOnly->GetTenant(&context, request, &tenant).ok();
  }));
  v1::Node node;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(vrid.readOnly->GetNode(&context, {}, &node).ok());
  }
  const int cpu = CpuSet::parse(node.shared_cpus())->last();
  v1::MoveVmRequest move;
  move.set_vm("test");
  v1::ThreadPin& pin = *move.add_pins();
  pin.set_id(1);
  pin.set_cpus(std::to_string(cpu));
  v1::MoveVmReply reply;
  {
    grpc::ClientContext context;
    const grpc::Status status = vrid.admin->MoveVm(&context, move, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_EQ(reply.live(), v1::MoveVmReply::APPLIED) << reply.live_detail();
  EXPECT_EQ(reply.vm().allocation().vcpu_cpus(1), cpu);
  EXPECT_EQ(reply.vm().spec().cpu_policy(), v1::MIXED);

  virConnectPtr conn = virConnectOpen("test:///default");
  ASSERT_NE(conn, nullptr);
  virDomainPtr domain = virDomainLookupByUUIDString(conn, kTestDomainUuid);
  ASSERT_NE(domain, nullptr);
  char* xml = virDomainGetXMLDesc(domain, 0);
  ASSERT_NE(xml, nullptr);
  auto live = parseDomainXml(xml);
  free(xml);
  virDomainFree(domain);
  virConnectClose(conn);
  ASSERT_TRUE(live.ok()) << live.error().message();
  EXPECT_EQ(live->cputune.vcpupins.at(1), CpuSet{cpu});
  EXPECT_EQ(live->vri.cpuPolicy, "mixed");
  EXPECT_EQ(live->vri.dedicatedVcpus, CpuSet{1});
  EXPECT_TRUE(live->pinsAreVris());
  EXPECT_FALSE(live->hasUserPins());

  // On the read-only socket the same call is refused, naming the socket to use.
  grpc::ClientContext context;
  const grpc::Status denied = vrid.readOnly->MoveVm(&context, move, &reply);
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("use the admin socket"));
}

}  // namespace
}  // namespace vri
