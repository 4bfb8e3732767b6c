#include "vrictl/report_views.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include <ctime>
#include <map>
#include <memory>

#include "vrictl/node_views.h"

namespace vri::ctl {

std::string formatEvent(const v1::Event& event, const TerminalStyle& style) {
  const std::time_t seconds = static_cast<std::time_t>(event.unix_millis() / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &utc);
  const std::string kind = v1::Event::Kind_Name(event.kind());
  const bool bad = event.kind() == v1::Event::REFUSED || event.kind() == v1::Event::RECONCILE_FAILED ||
                   event.kind() == v1::Event::WRITE_PENDING || event.kind() == v1::Event::HALTED ||
                   event.kind() == v1::Event::PINS_PENDING || event.kind() == v1::Event::PINS_DRIFTED ||
                   event.kind() == v1::Event::EVENTS_LOST || event.kind() == v1::Event::POLICY_PENDING;
  return fmt::format("{}.{:03} UTC  {}  {}{}\n", when, event.unix_millis() % 1000,
                     style.paint(fmt::format("{:<19}", kind), bad ? "1;31" : ""),
                     event.tenant().empty() ? "" : event.tenant() + "  ", event.detail());
}

std::string formatReconcile(const v1::ReconcileReply& reply, bool dryRun) {
  std::string out;
  if (reply.drift().empty() && reply.operations().empty()) {
    out = "The kernel agrees with the ledger: nothing to do.\n";
  } else {
    out += fmt::format("{} {}:\n", reply.drift_size(), reply.drift_size() == 1 ? "difference" : "differences");
    for (const std::string& line : reply.drift()) out += "  " + line + "\n";
    if (reply.operations().empty()) {
      out += "Nothing to write: what differs is not VRI's to make (kubelet's or libvirt's cgroups).\n";
    } else {
      out += fmt::format("{} cgroup {} {}:\n", reply.operations_size(),
                         reply.operations_size() == 1 ? "operation" : "operations",
                         dryRun ? "reconcile would run" : "run");
    }
    for (const std::string& line : reply.operations()) out += "  " + line + "\n";
  }
  for (const std::string& line : reply.notes()) out += "note: " + line + "\n";
  return out;
}

std::string formatTopology(const v1::Node& node) {
  std::string out = fmt::format("{} ({})\n", node.topology_source(), node.online_cpu_list());
  std::map<int, std::map<int, std::map<int, int>>> threads;  // package -> NUMA node -> core -> threads
  for (const v1::CpuInfo& cpu : node.cpus()) ++threads[cpu.package()][cpu.numa_node()][cpu.core()];
  for (const auto& [package, nodes] : threads) {
    int cores = 0;
    for (const auto& [numa, core_map] : nodes) cores += static_cast<int>(core_map.size());
    out += fmt::format("package {}: {} NUMA nodes, {} cores\n", package, nodes.size(), cores);
    for (const auto& [numa, core_map] : nodes) {
      for (const v1::NumaNodeInfo& info : node.numa()) {
        if (info.id() != numa) continue;
        std::string line = fmt::format("  NUMA node {}: {} cores, CPUs {}, {} memory", numa, core_map.size(),
                                       info.cpus(), formatBytes(info.memory_bytes()));
        for (const auto& [size, pages] : info.hugepages()) {
          if (pages > 0) line += fmt::format(", {} x {} pages", pages, formatBytes(size));
        }
        out += line + "\n";
      }
    }
  }
  for (const v1::NumaNodeInfo& info : node.numa()) {
    if (info.cpus().empty()) {
      out += fmt::format("NUMA node {}: no CPUs, {} memory\n", info.id(), formatBytes(info.memory_bytes()));
    }
  }
  return out;
}

std::string toJson(const google::protobuf::Message& message, bool oneLine) {
  // protobuf's JSON follows the binary form's order, whose maps are in hash order unless serialized
  // deterministically: serialized here that way, then turned into JSON.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  static constexpr char kPrefix[] = "type.googleapis.com";
  const std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(kPrefix,
                                                               google::protobuf::DescriptorPool::generated_pool()));
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = !oneLine;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::BinaryToJsonString(
      resolver.get(), std::string(kPrefix) + "/" + message.GetDescriptor()->full_name(), binary, &out, options);
  if (oneLine) out += "\n";
  return out;
}

std::string fieldsAsJson(const google::protobuf::Message& message, const std::vector<std::string>& fields) {
  google::protobuf::Struct all, some;
  (void)google::protobuf::util::JsonStringToMessage(toJson(message, true), &all);
  for (const std::string& field : fields) {
    if (const auto it = all.fields().find(field); it != all.fields().end())
      (*some.mutable_fields())[field] = it->second;
  }
  return toJson(some);
}

std::string formatHandBack(const v1::HandBackReply& reply, bool dryRun) {
  const std::string verb = dryRun ? "Would write " : "Wrote ";
  std::string out = verb + reply.checkpoint_path() + ": " + std::to_string(reply.exclusive_containers()) +
                    " exclusive containers, default set " + reply.default_cpus() + "\n" + reply.checkpoint() + "\n";
  if (!reply.memory_checkpoint_path().empty())
    out += verb + reply.memory_checkpoint_path() + ": " + std::to_string(reply.memory_containers()) +
           " containers of Guaranteed pods\n" + reply.memory_checkpoint() + "\n";
  else
    out += "kubelet's memory manager stays None" +
           (reply.kubelet_config().empty() ? std::string(" (no kubelet configuration named)")
                                           : " (" + reply.kubelet_config() + " says so)") +
           ": no memory_manager_state is written\n";
  if (dryRun) return out;
  return out + std::to_string(reply.cgroup_writes()) +
         " cgroup writes gave kubelet's QoS and pod cgroups every CPU. vrid now refuses every decision.\n"
         "Next: stop vrid and remove VRI; point kubelet at the runtime's own socket (or disable the NRI plugin); "
         "start kubelet with the configuration the checkpoints were checked against.\n";
}

}  // namespace vri::ctl
