// The configuration file: `name = value` lines in, the effective values out.
#include <set>

#include "base/quote.h"
#include "base/text.h"
#include "vri/daemon_config.h"

namespace vri {

namespace {

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace

Result<void> applyConfigText(DaemonConfig& config, std::string_view text, const std::string& origin) {
  DaemonConfig next = config;
  std::set<std::string> seen;
  int number = 0;
  for (const std::string_view raw : splitOn(text, '\n')) {
    ++number;
    const std::string line = trim(raw);
    if (line.empty() || line.starts_with("#")) continue;
    const std::string where = origin + ":" + std::to_string(number);
    const auto equals = line.find('=');
    if (equals == std::string::npos)
      return Error::invalidArgument(where + ": want `name = value`, got " + quoteForMessage(line));
    const std::string name = trim(std::string_view(line).substr(0, equals));
    const std::string value = trim(std::string_view(line).substr(equals + 1));
    if (!seen.insert(name).second)
      return Error::invalidArgument(where + ": " + quoteForMessage(name) + " is set twice");
    VRI_TRY(setConfigOption(next, name, value).context(where));
  }
  config = std::move(next);
  return {};
}

std::map<std::string, std::string> optionValues(const DaemonConfig& config) {
  std::map<std::string, std::string> values;
  for (const ConfigOption& option : configOptions()) values[option.name] = option.get(config);
  return values;
}

std::string formatConfig(const DaemonConfig& config) {
  std::string out;
  for (const ConfigOption& option : configOptions()) {
    const std::string value = option.get(config);
    out += std::string(option.name) + " =" + (value.empty() ? "" : " " + value) + "\n";
  }
  return out;
}

}  // namespace vri
