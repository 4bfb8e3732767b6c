// The CRI messages vri-cri-shim reads and rewrites, as bytes from its socket, through the same
// handlers its proxy registers. The leading byte picks the call: RunPodSandbox, CreateContainer,
// UpdateContainerResources, RemoveContainer, RemovePodSandbox. The runtime and vrid are the
// kubelet side's in-memory fakes (tests/support/), made anew for every input; the shim's reading,
// translating and rewriting is what is fuzzed.
//
// What the shim promises: every request is answered (parsed and served, or refused with a reason);
// what it forwards to the runtime is kubelet's request with only the resources it owns rewritten:
// every other field, and every field this CRI subset does not know (a newer kubelet's), arrives as
// kubelet sent it, and the unknown fields inside the rewritten resources survive too.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <grpcpp/generic/async_generic_service.h>

#include "fuzz/fuzz_input.h"
#include "kubelet-bridge/cri-shim/cri_shim.h"
#include "tests/support/fake_runtime.h"
#include "tests/support/fake_vrid.h"
#include "tools/cri-client/cri_client.h"

using namespace vri;
namespace crv1 = runtime::v1;

namespace {

constexpr char kRuntimeService[] = "/runtime.v1.RuntimeService/";
constexpr const char* kMethods[] = {"RunPodSandbox", "CreateContainer", "UpdateContainerResources", "RemoveContainer",
                                    "RemovePodSandbox"};

// Protobuf's serialization with map entries in key order, so that equal messages give equal bytes.
std::string deterministic(const google::protobuf::Message& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

// Only the fields `message`'s type does not know.
std::string unknownFieldsOf(const google::protobuf::Message& message) {
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  copy->CopyFrom(message);
  std::vector<const google::protobuf::FieldDescriptor*> known;
  copy->GetReflection()->ListFields(*copy, &known);
  for (const auto* field : known) copy->GetReflection()->ClearField(copy.get(), field);
  return copy->SerializeAsString();
}

// What the runtime received, read back as `Message`.
template <typename Message>
Message received(const testing::FakeRuntime& runtime, const std::string& method) {
  Message message;
  VRI_FUZZ_CHECK(message.ParseFromString(runtime.lastRequestBytes(method)));
  return message;
}

// The request kubelet sent and the one the runtime got agree outside `owned`, which the shim
// rewrites; inside it, the fields this subset does not know survive.
template <typename Message, typename Owned>
void checkOnlyOwnedRewritten(Message sent, Message got, Owned* (*owned)(Message&)) {
  VRI_FUZZ_CHECK(unknownFieldsOf(*owned(sent)) == unknownFieldsOf(*owned(got)));
  owned(sent)->Clear();
  owned(got)->Clear();
  VRI_FUZZ_CHECK(deterministic(sent) == deterministic(got));
}

crv1::LinuxContainerResources* createResources(crv1::CreateContainerRequest& r) {
  return r.mutable_config()->mutable_linux()->mutable_resources();
}
crv1::LinuxContainerResources* updateResources(crv1::UpdateContainerResourcesRequest& r) { return r.mutable_linux(); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Input in = fuzz::split(data, size);
  const std::string method = kMethods[in.kind % 5];
  std::string bytes(in.text);

  testing::FakeRuntime runtime;
  testing::FakeVrid vrid;
  vrid.setSharedCpus("0-3");
  CriShim shim(runtime, vrid, {});

  // The state kubelet's call finds: the sandbox a create names, the container an update names.
  if (method == "CreateContainer") {
    crv1::CreateContainerRequest request;
    if (request.ParseFromString(bytes)) {
      request.set_pod_sandbox_id(runtime.addSandbox(request.sandbox_config()));
      bytes = request.SerializeAsString();
    }
  } else if (method == "UpdateContainerResources" || method == "RemoveContainer") {
    const crv1::PodSandboxConfig pod = cri_client::sandboxConfig(
        "0b1c2d3e-0000-4000-8000-00000000000a", "fuzz",
        cri_client::podCgroupParent("/", cri_client::PodQos::kBurstable, "0b1c2d3e-0000-4000-8000-00000000000a"));
    const std::string sandbox = runtime.addSandbox(pod);
    const std::string container =
        runtime.addContainer(sandbox, cri_client::containerConfig(pod, "app", cri_client::kubeletResources(250, 0, 0)),
                             crv1::CONTAINER_RUNNING);
    vrid.holdPod(pod.metadata().uid(), sandbox, {{"app", container}});
  }

  const auto handlers = shim.handlers();
  const auto handler = handlers.find(kRuntimeService + method);
  VRI_FUZZ_CHECK(handler != handlers.end());
  grpc::GenericCallbackServerContext context;
  grpc::ByteBuffer reply;
  grpc::Slice slice(bytes);
  const grpc::Status status = handler->second(context, grpc::ByteBuffer(&slice, 1), &reply);
  VRI_FUZZ_CHECK(status.ok() || !status.error_message().empty());

  if (runtime.lastRequestBytes(method).empty()) return 0;  // refused before the runtime was asked
  if (method == "RunPodSandbox") {
    crv1::RunPodSandboxRequest sent;
    VRI_FUZZ_CHECK(sent.ParseFromString(bytes));
    VRI_FUZZ_CHECK(deterministic(sent) == deterministic(received<crv1::RunPodSandboxRequest>(runtime, method)));
  } else if (method == "CreateContainer") {
    crv1::CreateContainerRequest sent;
    VRI_FUZZ_CHECK(sent.ParseFromString(bytes));
    checkOnlyOwnedRewritten(sent, received<crv1::CreateContainerRequest>(runtime, method), &createResources);
  } else if (method == "UpdateContainerResources") {
    crv1::UpdateContainerResourcesRequest sent;
    VRI_FUZZ_CHECK(sent.ParseFromString(bytes));
    checkOnlyOwnedRewritten(sent, received<crv1::UpdateContainerResourcesRequest>(runtime, method), &updateResources);
  }
  return 0;
}
