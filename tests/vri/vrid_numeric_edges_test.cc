// Every numeric field of every request vrid reads, at 0, -1, its type's limits
// and just past the node's capacity, sent over the admin socket of a whole
// vrid. Found by reflection, so a field added to the API is covered without
// touching this test. A refusal must be clear (a known code; INVALID_ARGUMENT
// names the field) and leave the ledger and the cgroupfs exactly as they were;
// an answer must leave the ledger's sums consistent and every cgroup value
// writable, and is undone before the next case. The ledger then loads again.
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <limits>
#include <map>

#include "tests/support/directory_snapshot.h"
#include "tests/support/generic_call.h"
#include "tests/vri/daemon_harness.h"

namespace vri {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kPodUid[] = "0b1c2d3e-0000-4000-8000-0000000000e1";
constexpr char kResidentUid[] = "0b1c2d3e-0000-4000-8000-0000000000e2";
constexpr char kVmUuid[] = "7d7e0a2e-0000-4000-8000-0000000000e1";
constexpr char kResidentVm[] = "7d7e0a2e-0000-4000-8000-0000000000e2";

// The harness's node: 8 CPUs, 16 GiB.
constexpr int64_t kPastCpus = 9, kPastMilli = 8001;
constexpr uint64_t kPastBytes = (16ULL << 30) + 1;

// One numeric field somewhere in a request: the path to it ("containers[0].cpu_request_milli").
struct FieldRef {
  std::string path;
  std::vector<std::pair<const FieldDescriptor*, int>> steps;  // the field, and the element for repeated ones (-1)
};

void collectFields(const google::protobuf::Descriptor& type, const Message& sample, const std::string& prefix,
                   std::vector<std::pair<const FieldDescriptor*, int>> steps, std::vector<FieldRef>& out) {
  const Reflection& reflection = *sample.GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const FieldDescriptor* field = type.field(i);
    const int element = field->is_repeated() ? 0 : -1;
    if (field->is_repeated() && reflection.FieldSize(sample, field) == 0) continue;  // nothing to change
    const std::string path = prefix + field->name() + (field->is_repeated() ? "[0]" : "");
    auto here = steps;
    here.emplace_back(field, element);
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
      case FieldDescriptor::CPPTYPE_ENUM: out.push_back({path, here}); break;
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        if (field->is_map()) break;
        const Message& child = field->is_repeated() ? reflection.GetRepeatedMessage(sample, field, 0)
                                                    : reflection.GetMessage(sample, field);
        collectFields(*field->message_type(), child, path + ".", here, out);
        break;
      }
      default: break;
    }
  }
}

// The values to try for a field of this type.
std::vector<std::string> edgeValues(const FieldDescriptor& field) {
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return {"0", "-1", std::to_string(std::numeric_limits<int32_t>::min()),
              std::to_string(std::numeric_limits<int32_t>::max()), std::to_string(kPastCpus)};
    case FieldDescriptor::CPPTYPE_INT64:
      return {"0", "-1", std::to_string(std::numeric_limits<int64_t>::min()),
              std::to_string(std::numeric_limits<int64_t>::max()), std::to_string(kPastMilli)};
    case FieldDescriptor::CPPTYPE_UINT32:
      return {"0", std::to_string(std::numeric_limits<uint32_t>::max()), std::to_string(kPastCpus)};
    case FieldDescriptor::CPPTYPE_UINT64:
      return {"0", std::to_string(std::numeric_limits<uint64_t>::max()), std::to_string(uint64_t{1} << 63),
              std::to_string(kPastBytes)};
    case FieldDescriptor::CPPTYPE_ENUM: return {"-1", "999"};
    default: return {};
  }
}

void setValue(Message& request, const FieldRef& ref, const std::string& value) {
  Message* message = &request;
  for (size_t i = 0; i + 1 < ref.steps.size(); ++i) {
    const auto [field, element] = ref.steps[i];
    const Reflection& r = *message->GetReflection();
    message = element >= 0 ? r.MutableRepeatedMessage(message, field, element) : r.MutableMessage(message, field);
  }
  const auto [field, element] = ref.steps.back();
  const Reflection& r = *message->GetReflection();
  const bool repeated = element >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      repeated ? r.SetRepeatedInt32(message, field, element, std::stoi(value))
               : r.SetInt32(message, field, std::stoi(value));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      repeated ? r.SetRepeatedInt64(message, field, element, std::stoll(value))
               : r.SetInt64(message, field, std::stoll(value));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      repeated ? r.SetRepeatedUInt32(message, field, element, static_cast<uint32_t>(std::stoul(value)))
               : r.SetUInt32(message, field, static_cast<uint32_t>(std::stoul(value)));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      repeated ? r.SetRepeatedUInt64(message, field, element, std::stoull(value))
               : r.SetUInt64(message, field, std::stoull(value));
      break;
    case FieldDescriptor::CPPTYPE_ENUM:
      repeated ? r.SetRepeatedEnumValue(message, field, element, std::stoi(value))
               : r.SetEnumValue(message, field, std::stoi(value));
      break;
    default: break;
  }
}

v1::ContainerResources podContainer() {
  v1::ContainerResources c;
  c.set_name("app");
  c.set_id("e1a1");
  c.set_cpu_request_milli(100);
  c.set_cpu_limit_milli(200);
  c.set_memory_limit_bytes(64ULL << 20);
  c.set_memory_request_bytes(32ULL << 20);
  return c;
}

v1::AdmitPodRequest admitPod() {
  v1::AdmitPodRequest r;
  r.set_pod_uid(kPodUid);
  r.set_pod_name("shop/web");
  r.set_qos(v1::BURSTABLE);
  r.set_overhead_cpu_milli(50);
  r.set_overhead_memory_bytes(16ULL << 20);
  *r.add_containers() = podContainer();
  r.set_sandbox_id("e1s1");
  return r;
}

v1::AdmitContainerRequest admitContainer(const std::string& uid, v1::Qos qos, int64_t cpu, const std::string& id) {
  v1::AdmitContainerRequest r;
  r.set_pod_uid(uid);
  r.set_pod_name("shop/db");
  r.set_qos(qos);
  r.set_container_name("app");
  r.set_container_id(id);
  r.set_cpu_request_milli(cpu);
  r.set_cpu_limit_milli(cpu);
  r.set_memory_limit_bytes(128ULL << 20);
  r.set_memory_request_bytes(128ULL << 20);
  return r;
}

// A mixed VM with every numeric field in use: guest cells, memory parts bound
// to a node, online vCPU and iothread ids, one pinned vCPU.
v1::AdmitVmRequest admitVm(const std::string& uuid) {
  v1::AdmitVmRequest r;
  r.set_uuid(uuid);
  r.set_name("vm-" + uuid.substr(uuid.size() - 2));
  r.set_vcpus(2);
  r.set_max_vcpus(3);
  r.add_online_vcpus(0);
  r.add_online_vcpus(1);
  r.set_cpu_policy(v1::MIXED);
  r.add_mixed_dedicated_vcpus(1);
  r.set_guest_threads_per_core(1);
  r.set_thread_policy(v1::PREFER);
  r.set_memory_bytes(512ULL << 20);
  r.set_iothreads(1);
  r.add_iothread_ids(1);
  v1::GuestCell& cell = *r.add_cells();
  cell.set_id(0);
  cell.set_vcpus("0-2");
  v1::MemoryPart& part = *r.add_memory_parts();
  part.set_guest_cell(0);
  part.set_bytes(512ULL << 20);
  part.add_host_nodes(0);
  return r;
}

using Call = std::function<grpc::Status(v1::Vri::Stub&, const Message&)>;

template <typename Request, typename Reply>
Call call(grpc::Status (v1::Vri::Stub::*method)(grpc::ClientContext*, const Request&, Reply*)) {
  return [method](v1::Vri::Stub& stub, const Message& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Reply reply;
    return (stub.*method)(&context, static_cast<const Request&>(request), &reply);
  };
}

struct Rpc {
  std::string name;
  std::shared_ptr<Message> baseline;
  Call send;
  Call undo;  // brings an answered request back to the baseline
};

class VridNumericEdgesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(vrid_.start());
    // Residents that resizes and VM starts refer to.
    ASSERT_TRUE(
        send(call(&v1::Vri::Stub::AdmitContainer), admitContainer(kResidentUid, v1::BURSTABLE, 500, "e2a1")).ok());
    ASSERT_TRUE(send(call(&v1::Vri::Stub::AdmitVm), admitVm(kResidentVm)).ok());
  }

  grpc::Status send(const Call& c, const Message& request) { return c(*vrid_.admin, request); }

  // What the ledger shows: every tenant and the node's pools and sums.
  std::string ledgerView() {
    grpc::ClientContext c1, c2;
    v1::ListTenantsRequest all;
    v1::TenantList tenants;
    v1::Node node;
    EXPECT_TRUE(vrid_.readOnly->ListTenants(&c1, all, &tenants).ok());
    EXPECT_TRUE(vrid_.readOnly->GetNode(&c2, {}, &node).ok());
    tenants.clear_sequence();
    node.clear_options();
    std::string tenants_text, node_text;
    google::protobuf::TextFormat::Printer printer;  // map entries in key order
    printer.SetSingleLineMode(true);
    printer.PrintToString(tenants, &tenants_text);
    printer.PrintToString(node, &node_text);
    return tenants_text + "\n" + node_text;
  }

  std::map<std::string, std::string> cgroupView() { return testing::snapshotFiles(vrid_.tmp().sub("fx/cgroup")); }

  // The sums and values an answered request left: consistent, and writable by the kernel.
  void expectConsistent(const std::string& what) {
    grpc::ClientContext c1, c2;
    v1::Node node;
    ASSERT_TRUE(vrid_.readOnly->GetNode(&c1, {}, &node).ok());
    const int64_t shared_capacity = static_cast<int64_t>(CpuSet::parse(node.shared_cpus())->count()) * 1000;
    EXPECT_GE(node.shared_demand_milli(), 0) << what;
    EXPECT_LE(node.shared_demand_milli(), shared_capacity) << what;
    EXPECT_LE(node.admitted_memory_bytes(), node.allocatable_memory_bytes()) << what;
    v1::TenantList tenants;
    ASSERT_TRUE(vrid_.readOnly->ListTenants(&c2, {}, &tenants).ok());
    for (const v1::Tenant& t : tenants.tenants()) {
      for (const v1::ContainerInfo& c : t.pod().containers()) {
        const v1::ContainerAllocation& a = c.allocation();
        EXPECT_GE(a.cpu_shares(), 2u) << what;
        EXPECT_LE(a.cpu_shares(), 262144u) << what;
        if (a.cpu_quota_us() != 0) {
          EXPECT_GE(a.cpu_quota_us(), 1000) << what;
          EXPECT_LE(a.cpu_quota_us(), int64_t{1} << 34) << what;  // the kernel's ceiling is 2^44 ns
        }
        EXPECT_LE(a.memory_limit_bytes(), uint64_t{1} << 52) << what;
      }
    }
  }

  std::vector<Rpc> rpcs() {
    const auto container =
        std::make_shared<v1::AdmitContainerRequest>(admitContainer(kPodUid, v1::GUARANTEED, 1000, "e1b1"));
    v1::ReleasePodRequest release_pod;
    release_pod.set_pod_uid(kPodUid);
    const Call undo_pod = [release_pod](v1::Vri::Stub& stub, const Message&) {
      return call(&v1::Vri::Stub::ReleasePod)(stub, release_pod);
    };
    v1::ReleaseVmRequest release_vm;
    release_vm.set_uuid(kVmUuid);
    const Call undo_vm = [release_vm](v1::Vri::Stub& stub, const Message&) {
      return call(&v1::Vri::Stub::ReleaseVm)(stub, release_vm);
    };
    const v1::AdmitContainerRequest resident = admitContainer(kResidentUid, v1::BURSTABLE, 500, "e2a1");
    auto resize = std::make_shared<v1::AdmitContainerRequest>(resident);
    resize->set_cpu_request_milli(700);
    resize->set_cpu_limit_milli(900);
    const Call undo_resize = [resident](v1::Vri::Stub& stub, const Message&) {
      return call(&v1::Vri::Stub::ResizeContainer)(stub, resident);
    };
    auto resize_vm = std::make_shared<v1::AdmitVmRequest>(admitVm(kResidentVm));
    resize_vm->set_cpu_policy(v1::SHARED);  // its memory is NUMA-bound: a resize changes its CPUs only
    const Call undo_resize_vm = [](v1::Vri::Stub& stub, const Message&) {
      return call(&v1::Vri::Stub::ResizeVm)(stub, admitVm(kResidentVm));
    };
    auto started = std::make_shared<v1::VmStartedRequest>();
    started->set_uuid(kResidentVm);
    started->set_qemu_pid(4242);  // no such QEMU: every variant is refused
    const Call nothing = [](v1::Vri::Stub&, const Message&) { return grpc::Status::OK; };
    auto list = std::make_shared<v1::ListTenantsRequest>();
    list->set_kind(v1::ListTenantsRequest::PODS);
    return {
        {"AdmitPod", std::make_shared<v1::AdmitPodRequest>(admitPod()), call(&v1::Vri::Stub::AdmitPod), undo_pod},
        {"AdmitContainer", container, call(&v1::Vri::Stub::AdmitContainer), undo_pod},
        {"ResizeContainer", resize, call(&v1::Vri::Stub::ResizeContainer), undo_resize},
        {"AdmitVm", std::make_shared<v1::AdmitVmRequest>(admitVm(kVmUuid)), call(&v1::Vri::Stub::AdmitVm), undo_vm},
        {"ReserveVm", std::make_shared<v1::AdmitVmRequest>(admitVm(kVmUuid)), call(&v1::Vri::Stub::ReserveVm), undo_vm},
        {"ResizeVm", resize_vm, call(&v1::Vri::Stub::ResizeVm), undo_resize_vm},
        {"VmStarted", started, call(&v1::Vri::Stub::VmStarted), nothing},
        {"ListTenants", list, call(&v1::Vri::Stub::ListTenants), nothing},
    };
  }

  testing::DaemonHarness vrid_;
};

TEST_F(VridNumericEdgesTest, EveryNumericFieldAtItsEdgesIsRefusedClearlyOrAnsweredConsistently) {
  int cases = 0, refused = 0;
  for (const Rpc& rpc : rpcs()) {
    // The baseline itself is answered (and undone): the variants differ from an accepted request in one field.
    const std::string start = ledgerView();
    {
      const grpc::Status baseline = send(rpc.send, *rpc.baseline);
      ASSERT_TRUE(baseline.ok() || rpc.name == "VmStarted") << rpc.name << ": " << baseline.error_message();
      ASSERT_TRUE(rpc.undo(*vrid_.admin, *rpc.baseline).ok()) << rpc.name;
      ASSERT_EQ(ledgerView(), start) << rpc.name << ": undoing the baseline";
    }
    std::vector<FieldRef> fields;
    collectFields(*rpc.baseline->GetDescriptor(), *rpc.baseline, "", {}, fields);
    for (const FieldRef& field : fields) {
      for (const std::string& value : edgeValues(*field.steps.back().first)) {
        const std::string what = rpc.name + " " + field.path + "=" + value;
        std::unique_ptr<Message> request(rpc.baseline->New());
        request->CopyFrom(*rpc.baseline);
        setValue(*request, field, value);
        const std::string before = ledgerView();
        const auto cgroups_before = cgroupView();
        const grpc::Status status = send(rpc.send, *request);
        ++cases;
        if (status.ok()) {
          expectConsistent(what);
          ASSERT_TRUE(rpc.undo(*vrid_.admin, *request).ok()) << what;
          ASSERT_EQ(ledgerView(), before) << what << ": undone";
          continue;
        }
        ++refused;
        const auto code = status.error_code();
        EXPECT_TRUE(code == grpc::StatusCode::INVALID_ARGUMENT || code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
                    code == grpc::StatusCode::NOT_FOUND || code == grpc::StatusCode::FAILED_PRECONDITION)
            << what << ": " << status.error_code() << " " << status.error_message();
        EXPECT_FALSE(status.error_message().empty()) << what;
        if (code == grpc::StatusCode::INVALID_ARGUMENT) {
          const std::string name = field.steps.back().first->name();
          const std::string parent = field.steps.size() > 1 ? field.steps.front().first->name() : name;
          EXPECT_TRUE(status.error_message().find(name) != std::string::npos ||
                      status.error_message().find(parent) != std::string::npos)
              << what << ": the refusal does not name the field: " << status.error_message();
        }
        EXPECT_EQ(ledgerView(), before) << what << ": a refusal changed the ledger";
        EXPECT_EQ(cgroupView(), cgroups_before) << what << ": a refusal changed the cgroupfs";
      }
    }
  }
  std::printf("numeric edges: %d cases, %d refused\n", cases, refused);
  EXPECT_GT(cases, 150);
  EXPECT_GT(refused, cases / 2);
  // What the sweep left loads again, with nothing to report.
  ASSERT_TRUE(vrid_.restart());
  EXPECT_TRUE(vrid_.daemon().loadProblems().empty());
}

// Bytes that are not the call's message: INVALID_ARGUMENT with the reason, on either socket, and nothing decided.
TEST_F(VridNumericEdgesTest, UnparsableRequestsAreInvalidArgumentWithTheReason) {
  const std::string before = ledgerView();
  for (const std::string& socket : {vrid_.config.socket, vrid_.config.adminSocket}) {
    grpc::GenericStub stub(testing::DaemonHarness::channel(socket));
    for (const char* method : {"AdmitContainer", "AdmitVm", "ReleaseVm", "GetNode", "ListTenants", "Reconcile"}) {
      grpc::ClientContext context;
      testing::GenericCall call(stub, context, std::string("/vri.v1.Vri/") + method,
                                {std::string("\xff\xff\xff\x0f", 4)});
      ASSERT_TRUE(call.wait());
      EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << socket << " " << method << ": " << call.status.error_message();
      EXPECT_THAT(call.status.error_message(), ::testing::HasSubstr("does not parse as vri.v1.")) << method;
    }
  }
  EXPECT_EQ(ledgerView(), before);
  EXPECT_THAT(vrid_.logText(), ::testing::HasSubstr("AdmitContainer refused on the admin socket: INVALID_ARGUMENT"));
}

}  // namespace
}  // namespace vri
