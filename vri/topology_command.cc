#include "vri/topology_command.h"

#include <charconv>

#include "base/quote.h"

namespace vri {

const char kTopologyCommandUsage[] =
    "usage: vri-topology [--topology live|xml:PATH|synthetic:DESCRIPTION]\n"
    "                    [--reserved-cpus LIST | --reserved-cpu-count N] [--strict-cpu-reservation]\n"
    "\n"
    "Prints the node's topology (packages, NUMA nodes with memory and hugepages, L3 groups,\n"
    "cores and their threads, NUMA distances) and the CPU pools VRI would manage on it.\n"
    "  --topology               where to read the topology (default: live)\n"
    "  --reserved-cpus          reserve exactly these CPUs, e.g. 0-1\n"
    "  --reserved-cpu-count     reserve N CPUs chosen by topology, as kubelet does (default: 0)\n"
    "  --strict-cpu-reservation keep reserved CPUs out of the shared pool\n";

namespace {

Result<int> parseCount(const std::string& text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return Error::invalidArgument("--reserved-cpu-count wants a non-negative integer, got " + quoteForMessage(text));
  }
  return value;
}

}  // namespace

Result<TopologyCommand> parseTopologyCommand(const std::vector<std::string>& args) {
  TopologyCommand command;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (const auto equals = flag.find('='); flag.starts_with("--") && equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
      has_value = true;
    }
    const auto takeValue = [&]() -> Result<std::string> {
      if (has_value) return value;
      if (i + 1 >= args.size()) return Error::invalidArgument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      command.help = true;
    } else if (flag == "--strict-cpu-reservation") {
      command.reserved.strict = true;
    } else if (flag == "--topology") {
      VRI_ASSIGN_OR_RETURN(command.source, takeValue());
    } else if (flag == "--reserved-cpus") {
      VRI_ASSIGN_OR_RETURN(std::string list, takeValue());
      VRI_ASSIGN_OR_RETURN(command.reserved.cpus, CpuSet::parse(list).context("--reserved-cpus"));
    } else if (flag == "--reserved-cpu-count") {
      VRI_ASSIGN_OR_RETURN(std::string count, takeValue());
      VRI_ASSIGN_OR_RETURN(command.reserved.count, parseCount(count));
    } else {
      return Error::invalidArgument("unknown argument " + quoteForMessage(args[i]));
    }
  }
  return command;
}

}  // namespace vri
