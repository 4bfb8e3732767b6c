// vrid's command line: flags named after the options, --config, --help and --print-config.
#include <CLI/CLI.hpp>
#include <memory>

#include "base/owned_path.h"
#include "base/quote.h"
#include "vri/daemon_config.h"

namespace vri {

namespace {

// Every flag vrid takes, declared once: what --help shows and what parses the command line. Each
// option of the configuration is a flag of the same name, dashes for underscores.
std::unique_ptr<CLI::App> daemonFlags(DaemonCommand& command) {
  auto app = std::make_unique<CLI::App>(
      "The VRI node resource manager. Options come from the config file (default /etc/vri/vrid.conf,\n"
      "`name = value` lines) and are overridden by flags of the same name (--reserved-cpus=0-1).\n"
      "SIGHUP re-reads the file for the options marked (reload); SIGTERM stops after in-flight calls.\n"
      "vrid refuses to start on a state directory whose ledger is missing or damaged; --init-ledger\n"
      "begins a new one there (a damaged file is kept beside it) and adopts what runs from its cgroups.\n"
      "A first start, on an empty or new state directory, begins its ledger by itself.",
      "vrid");
  app->allow_extras();  // unknown flags are refused below, naming --help
  app->set_help_flag("-h,--help", "print this help and exit");
  app->add_flag("--version", command.version, "print vrid's version and exit");
  app->add_flag("--print-config", command.printConfig, "print the effective configuration and exit");
  app->add_flag("--init-ledger", command.initLedger,
                "begin a new ledger on a state directory whose ledger is missing or damaged");
  app->add_option_function<std::string>(
         "--config",
         [&command](const std::string& path) {
           command.configPath = path;
           command.configPathGiven = true;
         },
         "the configuration file (default: /etc/vri/vrid.conf, optional unless given)")
      ->type_name("PATH");
  for (const ConfigOption& option : configOptions()) {
    std::string flag = option.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    const std::string name = option.name;
    app->add_option_function<std::string>(
           "--" + flag, [&command, name](const std::string& value) { command.overrides.emplace_back(name, value); },
           std::string(option.help) + " (default: " + (*option.defaultValue ? option.defaultValue : "empty") + ")" +
               (option.reloadable ? " (reload)" : ""))
        ->type_name("VALUE")
        // An empty value is a value (`--reserved-cpus=`): CLI11 takes one only from an option that may have none.
        ->expected(0, 1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a flag given again wins, as in the file
  }
  return app;
}

// The option a flag names: "--reserved-cpus=0-1" is reserved_cpus.
std::string optionNameOf(const std::string& flag) {
  std::string name = flag.substr(2, flag.find('=') == std::string::npos ? std::string::npos : flag.find('=') - 2);
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

}  // namespace

std::string daemonUsage() {
  DaemonCommand unused;
  return daemonFlags(unused)->help();
}

Result<DaemonCommand> parseDaemonCommand(const std::vector<std::string>& args) {
  DaemonCommand command;
  const std::unique_ptr<CLI::App> app = daemonFlags(command);
  // An option's flag may take an empty value only after '=' (`--libvirt-uri=`): one standing alone,
  // with no value after it, is a mistake, not an empty value.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (!flag.starts_with("--") || flag.find('=') != std::string::npos) continue;
    const std::string name = optionNameOf(flag);
    if (name == "config" || findConfigOption(name) == nullptr) continue;
    if (i + 1 == args.size() || args[i + 1].starts_with("--")) return Error::invalidArgument(flag + " needs a value");
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes its vector last argument first
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    command.help = true;
    return command;
  } catch (const CLI::ParseError& e) {
    return Error::invalidArgument(e.what());
  }
  for (const std::string& extra : app->remaining()) {
    if (!extra.starts_with("--")) return Error::invalidArgument("unexpected argument " + quoteForMessage(extra));
    const std::string name = optionNameOf(extra);
    if (auto removed = removedConfigOption(name)) return Error::invalidArgument("--" + name + ": " + *removed);
    return Error::invalidArgument("unknown flag " + quoteForMessage(extra) + " (see --help)");
  }
  return command;
}

namespace {

// vrid.conf holds a few dozen options; a file far larger is not one.
constexpr size_t kMaxConfigFileBytes = 1 << 20;

}  // namespace

Result<DaemonConfig> loadDaemonConfig(const DaemonCommand& command) {
  DaemonConfig config = defaultConfig();
  // Whoever may write it decides placement; a FIFO or a device there is no configuration.
  auto text = readOwnedFile(command.configPath, "config", kMaxConfigFileBytes);
  if (text.ok()) {
    VRI_TRY(applyConfigText(config, *text, command.configPath));
  } else if (command.configPathGiven || text.error().code() != ErrorCode::kNotFound) {
    return text.error();
  }
  for (const auto& [name, value] : command.overrides)
    VRI_TRY(setConfigOption(config, name, value).context("flag --" + name));
  config.initLedger = command.initLedger;
  return config;
}

}  // namespace vri
