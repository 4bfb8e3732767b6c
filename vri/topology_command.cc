#include "vri/topology_command.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <memory>

#include "base/quote.h"

namespace vri {

namespace {

// Every flag vri-topology takes, declared once: what --help shows and what parses the command line.
std::unique_ptr<CLI::App> topologyFlags(TopologyCommand& command) {
  auto app = std::make_unique<CLI::App>(
      "Prints the node's topology (packages, NUMA nodes with memory and hugepages, L3 groups,\n"
      "cores and their threads, NUMA distances) and the CPU pools VRI would manage on it.",
      "vri-topology");
  app->set_help_flag("-h,--help", "print this help and exit");
  app->add_flag("--version")->description("print vri-topology's version and exit");  // answered in main, first
  app->add_option("--topology", command.source, "where to read the topology: live, xml:PATH or synthetic:DESCRIPTION")
      ->type_name("SOURCE")
      ->capture_default_str();
  app->add_option_function<std::string>(
         "--reserved-cpus",
         [&command](const std::string& list) {
           auto parsed = CpuSet::parse(list);
           if (!parsed.ok()) throw CLI::ValidationError("--reserved-cpus", parsed.error().message());
           command.reserved.cpus = *parsed;
         },
         "reserve exactly these CPUs, e.g. 0-1")
      ->type_name("LIST");
  app->add_option("--reserved-cpu-count", command.reserved.count,
                  "reserve N CPUs chosen by topology, as kubelet does (default: 0)")
      ->type_name("N")
      ->check(CLI::Validator(
          [](const std::string& text) {
            int value = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc() && end == text.data() + text.size() && value >= 0) return std::string();
            return "wants a non-negative integer, got " + quoteForMessage(text);
          },
          "N"));
  app->add_flag("--strict-cpu-reservation", command.reserved.strict, "keep reserved CPUs out of the shared pool");
  return app;
}

}  // namespace

std::string topologyUsage() {
  TopologyCommand unused;
  return topologyFlags(unused)->help();
}

Result<TopologyCommand> parseTopologyCommand(const std::vector<std::string>& args) {
  TopologyCommand command;
  const std::unique_ptr<CLI::App> app = topologyFlags(command);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes its vector last argument first
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    command.help = true;
  } catch (const CLI::ParseError& e) {
    return Error::invalidArgument(e.what());
  }
  return command;
}

}  // namespace vri
