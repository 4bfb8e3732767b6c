// vrid's command line: flags named after the options, --config, --help and --print-config.
#include "base/owned_path.h"
#include "base/quote.h"
#include "vri/daemon_config.h"

namespace vri {

std::string daemonUsage() {
  std::string out =
      "usage: vrid [--config PATH] [--print-config] [--init-ledger] [--version] [--OPTION=VALUE ...]\n"
      "\n"
      "The VRI node resource manager. Options come from the config file (default /etc/vri/vrid.conf,\n"
      "`name = value` lines) and are overridden by flags of the same name (--reserved-cpus=0-1).\n"
      "SIGHUP re-reads the file for the options marked (reload); SIGTERM stops after in-flight calls.\n"
      "vrid refuses to start on a state directory whose ledger is missing or damaged; --init-ledger\n"
      "begins a new one there (a damaged file is kept beside it) and adopts what runs from its cgroups.\n"
      "A first start, on an empty or new state directory, begins its ledger by itself.\n\n";
  for (const ConfigOption& option : configOptions()) {
    std::string flag = option.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    out += "  --" + flag + " (default: " + (*option.defaultValue ? option.defaultValue : "empty") + ")" +
           (option.reloadable ? " (reload)" : "") + "\n      " + option.help + "\n";
  }
  return out;
}

Result<DaemonCommand> parseDaemonCommand(const std::vector<std::string>& args) {
  DaemonCommand command;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    if (flag == "--help" || flag == "-h") {
      command.help = true;
      continue;
    }
    if (flag == "--version") {
      command.version = true;
      continue;
    }
    if (flag == "--print-config") {
      command.printConfig = true;
      continue;
    }
    if (flag == "--init-ledger") {
      command.initLedger = true;
      continue;
    }
    if (!flag.starts_with("--")) return Error::invalidArgument("unexpected argument " + quoteForMessage(flag));
    std::string name = flag.substr(2);
    std::optional<std::string> value;
    if (const auto equals = name.find('='); equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    }
    for (char& c : name) c = c == '-' ? '_' : c;
    if (!value) {
      if (i + 1 >= args.size()) return Error::invalidArgument(flag + " needs a value");
      value = args[++i];
    }
    if (name == "config") {
      command.configPath = *value;
      command.configPathGiven = true;
    } else if (auto removed = removedConfigOption(name)) {
      return Error::invalidArgument("--" + name + ": " + *removed);
    } else if (findConfigOption(name) == nullptr) {
      return Error::invalidArgument("unknown flag " + quoteForMessage(flag) + " (see --help)");
    } else {
      command.overrides.emplace_back(name, *value);
    }
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
