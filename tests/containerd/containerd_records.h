// What the containerd tests read of the containerd under test: which one it is (containerd_under_test.h),
// its NRI socket, and a container's values as containerd records them in the container's OCI spec.
#pragma once

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <string>

#include "kubelet-bridge/cri_client.h"
#include "tests/containerd/containerd_under_test.h"

namespace vri::testing {

using cri_client::CriClient;
using cri_client::PodQos;
namespace cri = ::runtime::v1;

inline const ContainerdUnderTest kUnderTest = containerdUnderTest();
inline const std::string kNriSocket = kUnderTest.nriSocket();

inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A value of the container's OCI spec, linux.resources.cpu.<field>, from containerd's verbose status.
inline std::string specCpu(CriClient& cri, const std::string& id, const std::string& field) {
  cri::ContainerStatusResponse status;
  if (!cri.status(id, &status, true).ok() || !status.info().contains("info")) return "<no verbose status>";
  google::protobuf::Struct info;
  if (!google::protobuf::util::JsonStringToMessage(status.info().at("info"), &info).ok()) return "<not JSON>";
  const google::protobuf::Value* at = nullptr;
  const google::protobuf::Struct* in = &info;
  for (const std::string key : {"runtimeSpec", "linux", "resources", "cpu", field.c_str()}) {
    const auto found = in->fields().find(key);
    if (found == in->fields().end()) return "<no " + key + ">";
    at = &found->second;
    in = &at->struct_value();
  }
  if (at->has_number_value()) return std::to_string(static_cast<int64_t>(at->number_value()));
  return at->string_value();
}

}  // namespace vri::testing
