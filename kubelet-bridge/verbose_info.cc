#include "kubelet-bridge/verbose_info.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <charconv>
#include <cmath>

namespace vri {

Result<std::string> verboseInfoValue(const runtime::v1::ContainerStatusResponse& status,
                                     const std::vector<std::string>& path) {
  const auto found = status.info().find("info");
  if (found == status.info().end()) return Error::notFound("the status has no verbose info");
  google::protobuf::Struct info;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(found->second, &info, options).ok())
    return Error::invalidArgument("the verbose info is not JSON");
  const google::protobuf::Value* at = nullptr;
  const google::protobuf::Struct* in = &info;
  for (const std::string& key : path) {
    const auto member = in->fields().find(key);
    if (member == in->fields().end()) return Error::notFound("the verbose info has no " + key);
    at = &member->second;
    in = &at->struct_value();
  }
  if (at == nullptr) return Error::invalidArgument("an empty path names no value");
  if (at->has_number_value()) return std::to_string(static_cast<int64_t>(std::llround(at->number_value())));
  return at->string_value();
}

Result<int> verboseInfoPid(const runtime::v1::ContainerStatusResponse& status) {
  VRI_ASSIGN_OR_RETURN(const std::string text, verboseInfoValue(status, {"pid"}));
  int pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid <= 0)
    return Error::invalidArgument("the verbose info's pid is not a process id: " + text);
  return pid;
}

Result<std::string> verboseInfoSpecCpu(const runtime::v1::ContainerStatusResponse& status, const std::string& field) {
  return verboseInfoValue(status, {"runtimeSpec", "linux", "resources", "cpu", field});
}

}  // namespace vri
