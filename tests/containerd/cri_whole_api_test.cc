// Every call of CRI's whole API (tests/containerd/cri-api/api.proto) answers through vri-cri-shim as
// containerd answers it, whatever this containerd implements of it (labels `containerd` and
// `containerd2`; start them with tests/containerd/containerd-fixture.sh up 1.6|2).
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "tests/containerd/cri-api/api.pb.h"
#include "tests/containerd/cri_passthrough_fixture.h"
#include "tests/vri/vrid_process.h"
#include "tools/cri-client/cri_client.h"

namespace vri {
namespace {

using cri_passthrough::Answer;
using cri_passthrough::ask;
using cri_passthrough::CriPassthroughTest;
using cri_passthrough::kContainerd;
using cri_passthrough::kUnderTest;

namespace full = ::vri_test_cri_api::runtime::v1;
using google::protobuf::Message;

// Two replies of one call compared: true when they agree; what differs goes to `report`.
using Comparison = std::function<bool(const std::string& direct, const std::string& through, std::string* report)>;

// Parsed as `Reply`, each normalised, then compared field by field, lists as sets (containerd
// builds them from Go maps, in no fixed order).
template <typename Reply>
Comparison asMessages(std::function<void(Reply&)> normalise = {}) {
  return [normalise](const std::string& a, const std::string& b, std::string* report) {
    Reply x, y;
    if (!x.ParseFromString(a) || !y.ParseFromString(b)) {
      *report = "a reply does not parse as " + Reply::descriptor()->full_name();
      return false;
    }
    if (normalise) {
      normalise(x);
      normalise(y);
    }
    google::protobuf::util::MessageDifferencer differ;
    differ.set_repeated_field_comparison(google::protobuf::util::MessageDifferencer::AS_SET);
    differ.ReportDifferencesToString(report);
    return differ.Compare(x, y);
  };
}

// Every number below `m` set to 0: the statistics and timestamps that two calls a moment apart
// cannot share. Their presence, names and strings are still compared.
void zeroNumbers(Message& m) {
  using Field = google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = m.GetReflection();
  std::vector<const Field*> fields;
  r->ListFields(m, &fields);
  for (const Field* f : fields) {
    if (f->cpp_type() == Field::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int i = 0; i < r->FieldSize(m, f); ++i) zeroNumbers(*r->MutableRepeatedMessage(&m, f, i));
      } else {
        zeroNumbers(*r->MutableMessage(&m, f));
      }
    } else if (f->cpp_type() == Field::CPPTYPE_INT64 || f->cpp_type() == Field::CPPTYPE_UINT64 ||
               f->cpp_type() == Field::CPPTYPE_DOUBLE) {
      r->ClearField(&m, f);
    }
  }
}
template <typename Reply>
Comparison withoutNumbers() {
  return asMessages<Reply>([](Reply& reply) { zeroNumbers(reply); });
}

// A streaming server's URL ends in a one-time token: the rest must agree.
template <typename Reply>
Comparison withoutToken() {
  return asMessages<Reply>([](Reply& reply) { reply.set_url(reply.url().substr(0, reply.url().rfind('/') + 1)); });
}

Comparison sameBytes() {
  return [](const std::string& a, const std::string& b, std::string* report) {
    if (a == b) return true;
    *report = "the bytes differ";
    return false;
  };
}

struct Call {
  std::string method;                // "/runtime.v1.RuntimeService/Version"
  std::string direct, through;       // the requests, the same unless the call makes something of its own
  Comparison compare = sameBytes();  // of the replies
};

void expectAgreement(const std::string& shim, const Call& call) {
  const Answer direct = ask(kContainerd, call.method, call.direct);
  const Answer through = ask(shim, call.method, call.through);
  // What this containerd makes of each call, for the log.
  std::cout << "  " << call.method << ": " << (direct.code == grpc::StatusCode::OK ? "OK" : direct.message) << "\n";
  EXPECT_EQ(through.code, direct.code) << call.method << ": directly '" << direct.message << "', through the shim '"
                                       << through.message << "'";
  EXPECT_EQ(through.message, direct.message) << call.method;
  ASSERT_EQ(through.replies.size(), direct.replies.size()) << call.method;
  for (size_t i = 0; i < direct.replies.size(); ++i) {
    std::string report;
    EXPECT_TRUE(call.compare(direct.replies[i], through.replies[i], &report)) << call.method << ": " << report;
  }
}

template <typename Request>
std::string bytes(const Request& request) {
  return request.SerializeAsString();
}

// The pass-through test with a vrid behind the shim: the calls that make pods and containers go
// through the shim's own handlers, on a pod outside kubelet's tree (no cgroup parent), as crictl
// and critest make them.
class CriWholeApiTest : public CriPassthroughTest {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the containerd tests run as root";
    vrid_ = std::make_unique<testing::VridProcess>(tmp_, "vrid", std::vector<std::string>{"--topology=live"});
    ASSERT_TRUE(vrid_->start());
    ASSERT_TRUE(std::filesystem::exists(kContainerd))
        << "containerd is not running at " << kContainerd << ": " << kUnderTest.fixtureHint();
    shim_ = testing::spawn(
        {VRI_CRI_SHIM_BINARY, "--listen=" + socket(), "--containerd=" + kContainerd, "--vrid=" + vrid_->adminSocket()},
        tmp_.sub("shim.log"), O_TRUNC, true);
    ASSERT_TRUE(testing::eventually([&] { return std::filesystem::exists(socket()); }))
        << testing::readFile(tmp_.sub("shim.log"));
  }
  void TearDown() override {
    cri_client::CriClient direct(kContainerd);
    runtime::v1::ListPodSandboxResponse sandboxes;
    if (direct.listPodSandboxes(&sandboxes).ok()) {
      for (const runtime::v1::PodSandbox& s : sandboxes.items()) {
        if (!s.metadata().uid().starts_with(prefix_)) continue;
        EXPECT_TRUE(direct.stopPodSandbox(s.id()).ok());
        EXPECT_TRUE(direct.removePodSandbox(s.id()).ok());
      }
    }
    CriPassthroughTest::TearDown();
    vrid_->stop();
  }

  full::PodSandboxConfig pod(const std::string& uid) const {
    full::PodSandboxConfig config;
    config.mutable_metadata()->set_name("whole-api");
    config.mutable_metadata()->set_uid(uid);
    config.mutable_metadata()->set_namespace_("critest");
    // Host network: no CNI on these machines. No cgroup parent: not one of kubelet's pods.
    config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(full::NODE);
    return config;
  }
  full::ContainerConfig container(const std::string& name) const {
    full::ContainerConfig config;
    config.mutable_metadata()->set_name(name);
    config.mutable_image()->set_image("localhost/vri/pause:1.0");
    config.add_command("/sleeper");
    config.mutable_linux()->mutable_resources()->set_cpu_shares(256);
    config.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(64 << 20);
    config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(full::NODE);
    return config;
  }
  template <typename Reply>
  Reply callOk(const std::string& socket, const std::string& method, const std::string& request) {
    const Answer answer = ask(socket, method, request);
    Reply reply;
    EXPECT_EQ(answer.code, grpc::StatusCode::OK) << method << ": " << answer.message << "\n"
                                                 << testing::readFile(tmp_.sub("shim.log"));
    if (answer.replies.size() == 1) {
      EXPECT_TRUE(reply.ParseFromString(answer.replies.front()));
    }
    return reply;
  }

  const std::string prefix_ = "vri-whole-api-" + std::to_string(::getpid()) + "-";
  std::unique_ptr<testing::VridProcess> vrid_;
};

constexpr char kRuntime[] = "/runtime.v1.RuntimeService/";
constexpr char kImage[] = "/runtime.v1.ImageService/";

TEST_F(CriWholeApiTest, EveryCallOfTheCriApiAnswersThroughTheShimAsContainerdAnswersIt) {
  const auto runtime = [](const char* name) { return std::string(kRuntime) + name; };
  const auto image = [](const char* name) { return std::string(kImage) + name; };
  std::set<std::string> tested;
  const auto check = [&](const Call& call) {
    tested.insert(call.method);
    SCOPED_TRACE(call.method);
    expectAgreement(socket(), call);
  };

  // A pod and a container made on containerd directly, for the calls that look at one.
  full::RunPodSandboxRequest run;
  *run.mutable_config() = pod(prefix_ + "target");
  const std::string sandbox =
      callOk<full::RunPodSandboxResponse>(kContainerd, runtime("RunPodSandbox"), bytes(run)).pod_sandbox_id();
  full::CreateContainerRequest create;
  create.set_pod_sandbox_id(sandbox);
  *create.mutable_config() = container("app");
  *create.mutable_sandbox_config() = run.config();
  const std::string app =
      callOk<full::CreateContainerResponse>(kContainerd, runtime("CreateContainer"), bytes(create)).container_id();
  full::StartContainerRequest start;
  start.set_container_id(app);
  callOk<full::StartContainerResponse>(kContainerd, runtime("StartContainer"), bytes(start));
  ASSERT_FALSE(sandbox.empty() || app.empty());

  // The life cycle, each step once straight to containerd and once through the shim (and vrid),
  // on two pods alike but for their UIDs: the answers agree but for the ids each makes.
  full::RunPodSandboxRequest run_direct, run_through;
  *run_direct.mutable_config() = pod(prefix_ + "direct");
  *run_through.mutable_config() = pod(prefix_ + "through");
  std::string sandboxes[2];
  check({runtime("RunPodSandbox"), bytes(run_direct), bytes(run_through),
         asMessages<full::RunPodSandboxResponse>([&](full::RunPodSandboxResponse& reply) {
           EXPECT_FALSE(reply.pod_sandbox_id().empty());
           reply.clear_pod_sandbox_id();
         })});
  const full::ListPodSandboxResponse listed =
      callOk<full::ListPodSandboxResponse>(kContainerd, runtime("ListPodSandbox"), "");
  for (const full::PodSandbox& s : listed.items()) {
    if (s.metadata().uid() == prefix_ + "direct") sandboxes[0] = s.id();
    if (s.metadata().uid() == prefix_ + "through") sandboxes[1] = s.id();
  }
  ASSERT_FALSE(sandboxes[0].empty() || sandboxes[1].empty());
  full::CreateContainerRequest create_in[2];
  for (int i = 0; i < 2; ++i) {
    create_in[i].set_pod_sandbox_id(sandboxes[i]);
    // A name no runtime id could be: 150 characters.
    *create_in[i].mutable_config() = container(std::string(150, 'n'));
    *create_in[i].mutable_sandbox_config() = (i == 0 ? run_direct : run_through).config();
  }
  check({runtime("CreateContainer"), bytes(create_in[0]), bytes(create_in[1]),
         asMessages<full::CreateContainerResponse>([&](full::CreateContainerResponse& reply) {
           EXPECT_FALSE(reply.container_id().empty());
           reply.clear_container_id();
         })});
  std::string made[2];
  const full::ListContainersResponse containers =
      callOk<full::ListContainersResponse>(kContainerd, runtime("ListContainers"), "");
  for (const full::Container& c : containers.containers()) {
    for (int i = 0; i < 2; ++i) {
      if (c.pod_sandbox_id() == sandboxes[i]) made[i] = c.id();
    }
  }
  ASSERT_FALSE(made[0].empty() || made[1].empty());
  const auto on_each = [&](auto request, const auto& set) {
    std::string out[2];
    for (int i = 0; i < 2; ++i) {
      set(request, i);
      out[i] = bytes(request);
    }
    return std::pair(out[0], out[1]);
  };
  {
    auto [a, b] = on_each(full::StartContainerRequest(), [&](auto& r, int i) { r.set_container_id(made[i]); });
    check({runtime("StartContainer"), a, b});
  }
  // Through the shim the container runs on vrid's shared pool; directly, on every CPU.
  {
    full::ContainerStatusRequest status;
    status.set_container_id(made[1]);
    const auto through = callOk<full::ContainerStatusResponse>(socket(), runtime("ContainerStatus"), bytes(status));
    EXPECT_EQ(through.status().state(), full::CONTAINER_RUNNING);
    EXPECT_FALSE(through.status().resources().linux().cpuset_cpus().empty());
    EXPECT_EQ(through.status().resources().linux().cpu_shares(), 256);  // the client's own value
  }
  {
    auto [a, b] = on_each(full::StopContainerRequest(), [&](auto& r, int i) { r.set_container_id(made[i]); });
    check({runtime("StopContainer"), a, b});
  }
  {
    auto [a, b] = on_each(full::RemoveContainerRequest(), [&](auto& r, int i) { r.set_container_id(made[i]); });
    check({runtime("RemoveContainer"), a, b});
  }
  {
    auto [a, b] = on_each(full::StopPodSandboxRequest(), [&](auto& r, int i) { r.set_pod_sandbox_id(sandboxes[i]); });
    check({runtime("StopPodSandbox"), a, b});
  }
  {
    auto [a, b] = on_each(full::RemovePodSandboxRequest(), [&](auto& r, int i) { r.set_pod_sandbox_id(sandboxes[i]); });
    check({runtime("RemovePodSandbox"), a, b});
  }

  // The calls that change nothing, or the same thing twice, on the pod made directly.
  full::VersionRequest version;
  version.set_version("v1");
  check({runtime("Version"), bytes(version), bytes(version)});
  full::StatusRequest status;
  status.set_verbose(true);
  check({runtime("Status"), bytes(status), bytes(status), asMessages<full::StatusResponse>()});
  check({runtime("RuntimeConfig"), "", "", asMessages<full::RuntimeConfigResponse>()});
  full::UpdateRuntimeConfigRequest runtime_config;
  runtime_config.mutable_runtime_config()->mutable_network_config()->set_pod_cidr("");
  check({runtime("UpdateRuntimeConfig"), bytes(runtime_config), bytes(runtime_config)});
  full::PodSandboxStatusRequest sandbox_status;
  sandbox_status.set_pod_sandbox_id(sandbox);
  sandbox_status.set_verbose(true);
  check({runtime("PodSandboxStatus"), bytes(sandbox_status), bytes(sandbox_status),
         asMessages<full::PodSandboxStatusResponse>()});
  full::ListPodSandboxRequest sandboxes_of;
  sandboxes_of.mutable_filter()->set_id(sandbox);
  check({runtime("ListPodSandbox"), bytes(sandboxes_of), bytes(sandboxes_of),
         asMessages<full::ListPodSandboxResponse>()});
  full::ListContainersRequest containers_of;
  containers_of.mutable_filter()->set_pod_sandbox_id(sandbox);
  check({runtime("ListContainers"), bytes(containers_of), bytes(containers_of),
         asMessages<full::ListContainersResponse>()});
  full::ContainerStatusRequest container_status;
  container_status.set_container_id(app);
  container_status.set_verbose(true);
  check({runtime("ContainerStatus"), bytes(container_status), bytes(container_status),
         asMessages<full::ContainerStatusResponse>()});
  // Not one of vrid's containers: the shim passes the resize on as it came.
  full::UpdateContainerResourcesRequest update;
  update.set_container_id(app);
  update.mutable_linux()->set_cpu_shares(300);
  check({runtime("UpdateContainerResources"), bytes(update), bytes(update)});
  full::ReopenContainerLogRequest reopen;
  reopen.set_container_id(app);
  check({runtime("ReopenContainerLog"), bytes(reopen), bytes(reopen)});
  full::ExecSyncRequest exec_sync;
  exec_sync.set_container_id(app);
  exec_sync.add_cmd("/sleeper");
  exec_sync.add_cmd("echo");
  exec_sync.add_cmd("through the shim");
  exec_sync.set_timeout(10);
  check({runtime("ExecSync"), bytes(exec_sync), bytes(exec_sync)});
  full::ExecRequest exec;
  exec.set_container_id(app);
  exec.add_cmd("/sleeper");
  exec.set_stdout(true);
  check({runtime("Exec"), bytes(exec), bytes(exec), withoutToken<full::ExecResponse>()});
  full::AttachRequest attach;
  attach.set_container_id(app);
  attach.set_stdout(true);
  check({runtime("Attach"), bytes(attach), bytes(attach), withoutToken<full::AttachResponse>()});
  full::PortForwardRequest forward;
  forward.set_pod_sandbox_id(sandbox);
  forward.add_port(80);
  check({runtime("PortForward"), bytes(forward), bytes(forward), withoutToken<full::PortForwardResponse>()});
  full::ContainerStatsRequest container_stats;
  container_stats.set_container_id(app);
  check({runtime("ContainerStats"), bytes(container_stats), bytes(container_stats),
         withoutNumbers<full::ContainerStatsResponse>()});
  full::ListContainerStatsRequest list_container_stats;
  list_container_stats.mutable_filter()->set_id(app);
  check({runtime("ListContainerStats"), bytes(list_container_stats), bytes(list_container_stats),
         withoutNumbers<full::ListContainerStatsResponse>()});
  full::PodSandboxStatsRequest sandbox_stats;
  sandbox_stats.set_pod_sandbox_id(sandbox);
  check({runtime("PodSandboxStats"), bytes(sandbox_stats), bytes(sandbox_stats),
         withoutNumbers<full::PodSandboxStatsResponse>()});
  full::ListPodSandboxStatsRequest list_sandbox_stats;
  list_sandbox_stats.mutable_filter()->set_id(sandbox);
  check({runtime("ListPodSandboxStats"), bytes(list_sandbox_stats), bytes(list_sandbox_stats),
         withoutNumbers<full::ListPodSandboxStatsResponse>()});
  check({runtime("ListMetricDescriptors"), "", "", asMessages<full::ListMetricDescriptorsResponse>()});
  check({runtime("ListPodSandboxMetrics"), "", "", withoutNumbers<full::ListPodSandboxMetricsResponse>()});
  full::CheckpointContainerRequest checkpoint;
  checkpoint.set_container_id(app);
  checkpoint.set_location(tmp_.sub("checkpoint.tar"));
  check({runtime("CheckpointContainer"), bytes(checkpoint), bytes(checkpoint)});
  full::UpdatePodSandboxResourcesRequest sandbox_resources;
  sandbox_resources.set_pod_sandbox_id(sandbox);
  sandbox_resources.mutable_resources()->set_cpu_shares(512);
  check({runtime("UpdatePodSandboxResources"), bytes(sandbox_resources), bytes(sandbox_resources)});

  // The event stream, once each way while a container is created: the same code, and on a
  // containerd that serves it, the container's event. (containerd hands each event to one of its
  // subscribers, with those made before any subscriber first: two streams at once would split them.)
  {
    tested.insert(runtime("GetContainerEvents"));
    const auto stream = [&](const std::string& at, const std::string& name) {
      grpc::GenericStub stub(grpc::CreateChannel("unix:" + at, grpc::InsecureChannelCredentials()));
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
      testing::GenericCall call(stub, context, runtime("GetContainerEvents"), {""});
      std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the stream is open
      full::CreateContainerRequest another = create;
      another.mutable_config()->mutable_metadata()->set_name(name);
      const std::string id =
          callOk<full::CreateContainerResponse>(kContainerd, runtime("CreateContainer"), bytes(another)).container_id();
      EXPECT_TRUE(call.wait());
      bool created = false;
      for (const std::string& reply : call.replies) {
        full::ContainerEventResponse event;
        EXPECT_TRUE(event.ParseFromString(reply));
        created =
            created || (event.container_id() == id && event.container_event_type() == full::CONTAINER_CREATED_EVENT);
      }
      return std::tuple(call.status.error_code(), call.status.error_message(), created);
    };
    // At the deadline the status is gRPC's, not the runtime's: the client's own timer (DEADLINE_EXCEEDED,
    // "Deadline Exceeded") or the server ending the call it holds (CANCELLED, "Received RST_STREAM with
    // error code 8"), whichever comes first; both are the deadline.
    const auto at_deadline = [](grpc::StatusCode code, const std::string& message) {
      return code == grpc::StatusCode::DEADLINE_EXCEEDED ||
             (code == grpc::StatusCode::CANCELLED && message.find("RST_STREAM with error code 8") != std::string::npos);
    };
    const auto [direct_code, direct_message, direct_created] = stream(kContainerd, "events-direct");
    const auto [shim_code, shim_message, shim_created] = stream(socket(), "events-through");
    if (at_deadline(direct_code, direct_message)) {
      EXPECT_TRUE(at_deadline(shim_code, shim_message)) << shim_code << ": " << shim_message;
    } else {
      EXPECT_EQ(shim_code, direct_code) << direct_message;
      EXPECT_EQ(shim_message, direct_message);
    }
    EXPECT_EQ(shim_created, direct_created);
    if (kUnderTest.atLeast2()) {
      EXPECT_TRUE(direct_created && shim_created);
    }
  }

  // Images.
  check({image("ListImages"), "", "", asMessages<full::ListImagesResponse>()});
  full::ImageStatusRequest image_status;
  image_status.mutable_image()->set_image("localhost/vri/pause:1.0");
  image_status.set_verbose(true);
  check({image("ImageStatus"), bytes(image_status), bytes(image_status), asMessages<full::ImageStatusResponse>()});
  check({image("ImageFsInfo"), "", "", withoutNumbers<full::ImageFsInfoResponse>()});
  full::PullImageRequest pull;  // nothing listens there: refused alike
  pull.mutable_image()->set_image("127.0.0.1:1/vri/absent:0");
  check({image("PullImage"), bytes(pull), bytes(pull)});
  full::RemoveImageRequest remove_image;  // not there: done, as the API says
  remove_image.mutable_image()->set_image("localhost/vri/absent:0");
  check({image("RemoveImage"), bytes(remove_image), bytes(remove_image)});

  // Every call the API declares was made.
  const google::protobuf::FileDescriptor* api = full::VersionRequest::descriptor()->file();
  std::vector<std::string> untested;
  for (int s = 0; s < api->service_count(); ++s) {
    for (int m = 0; m < api->service(s)->method_count(); ++m) {
      const std::string method = "/runtime.v1." + api->service(s)->name() + "/" + api->service(s)->method(m)->name();
      if (!tested.count(method)) untested.push_back(method);
    }
  }
  EXPECT_EQ(untested, std::vector<std::string>{});
  EXPECT_EQ(tested.size(), 35u);
}

}  // namespace
}  // namespace vri
