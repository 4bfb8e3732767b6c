// vrictl: administers vrid the way virsh administers libvirt.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cgroup-model/version.h"
#include "proto/vri.grpc.pb.h"
#include "vri/vrictl_format.h"

namespace {

constexpr char kUsage[] =
    "usage: vrictl [--socket PATH] [--json] COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  nodeinfo               the node's topology, cgroup driver and policies\n"
    "  capacity               capacity, allocatable and what is admitted\n"
    "  pool                   reserved, shared and exclusive CPUs\n"
    "  list [--pods|--vms]    every tenant\n"
    "  dominfo NAME|UUID      one VM: its vCPUs' CPUs, emulator, memory, cgroup\n"
    "  podinfo UID            one pod and its containers\n"
    "\n"
    "  --socket PATH          vrid's socket (default /run/vri/vri.sock, the read-only one)\n"
    "  --json                 print the API's message as JSON\n";

struct Options {
  std::string socket = "/run/vri/vri.sock";
  bool json = false;
  std::vector<std::string> words;
};

int usageError(const std::string& message) {
  std::fprintf(stderr, "vrictl: %s\n%s", message.c_str(), kUsage);
  return 2;
}

template <typename Message>
int print(const Message& message, bool json, std::string (*format)(const Message&)) {
  if (!json) {
    std::cout << format(message);
    return 0;
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  std::cout << out;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (vri::answeredVersion(argc, argv, "vrictl")) return 0;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--json") {
      o.json = true;
    } else if (arg == "--socket") {
      if (++i >= argc) return usageError("--socket needs a path");
      o.socket = argv[i];
    } else if (arg.starts_with("--socket=")) {
      o.socket = arg.substr(9);
    } else {
      o.words.push_back(arg);
    }
  }
  if (o.words.empty()) return usageError("no command given");
  const std::string command = o.words[0];
  const std::string target = "unix:" + o.socket;
  grpc::ChannelArguments channel_args;
  channel_args.SetUserAgentPrefix(vri::clientUserAgent("vrictl"));
  auto stub =
      vri::v1::Vri::NewStub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), channel_args));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const auto failed = [&](const grpc::Status& status) {
    if ((status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) &&
        ::access(o.socket.c_str(), W_OK) != 0 && errno == EACCES)
      std::fprintf(stderr,
                   "vrictl: %s is not open to this user: vrid's sockets are root's, and the read-only one also its "
                   "socket_group's when vrid.conf names one\n",
                   o.socket.c_str());
    else if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
             status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      std::fprintf(stderr, "vrictl: cannot reach vrid at %s: %s\n", target.c_str(), status.error_message().c_str());
    else
      std::fprintf(stderr, "vrictl: %s\n", status.error_message().c_str());
    return 1;
  };
  const auto wantArgs = [&](size_t n) { return o.words.size() == n + 1; };

  if (command == "nodeinfo" || command == "capacity" || command == "pool") {
    if (!wantArgs(0)) return usageError(command + " takes no arguments");
    vri::v1::Node node;
    const grpc::Status status = stub->GetNode(&context, {}, &node);
    if (!status.ok()) return failed(status);
    return print(node, o.json,
                 command == "nodeinfo"   ? &vri::formatNodeInfo
                 : command == "capacity" ? &vri::formatCapacity
                                         : &vri::formatPool);
  }
  if (command == "list") {
    vri::v1::ListTenantsRequest request;
    for (size_t i = 1; i < o.words.size(); ++i) {
      if (o.words[i] == "--pods") {
        request.set_kind(vri::v1::ListTenantsRequest::PODS);
      } else if (o.words[i] == "--vms") {
        request.set_kind(vri::v1::ListTenantsRequest::VMS);
      } else {
        return usageError("list takes --pods or --vms, not " + o.words[i]);
      }
    }
    vri::v1::TenantList list;
    const grpc::Status status = stub->ListTenants(&context, request, &list);
    if (!status.ok()) return failed(status);
    return print(list, o.json, &vri::formatTenantList);
  }
  if (command == "dominfo" || command == "podinfo") {
    if (!wantArgs(1)) return usageError(command + " takes one argument");
    vri::v1::GetTenantRequest request;
    if (command == "dominfo") {
      request.set_vm(o.words[1]);
    } else {
      request.set_pod_uid(o.words[1]);
    }
    vri::v1::Tenant tenant;
    const grpc::Status status = stub->GetTenant(&context, request, &tenant);
    if (!status.ok()) return failed(status);
    if (command == "dominfo") return print(tenant.vm(), o.json, &vri::formatVmInfo);
    return print(tenant.pod(), o.json, &vri::formatPodInfo);
  }
  return usageError("unknown command " + command);
}
