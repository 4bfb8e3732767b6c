#include "vri/config_option_builders.h"

#include <arpa/inet.h>

#include <charconv>

#include "base/quote.h"

namespace vri::config_option {

Result<bool> parseBool(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return Error::invalidArgument("want true or false, got " + quoteForMessage(text));
}

Result<int64_t> parseInteger(const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Error::invalidArgument("want an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                                  ", got " + quoteForMessage(text));
  }
  return value;
}

Result<uint64_t> parseBytes(const std::string& text) {
  VRI_ASSIGN_OR_RETURN(Quantity q, Quantity::parse(text));
  return static_cast<uint64_t>(q.value());
}

Result<std::string> parseAbsolutePath(const std::string& text) {
  if (!text.starts_with("/")) return Error::invalidArgument("want an absolute path, got " + quoteForMessage(text));
  return text;
}

Result<void> parseIpv4Address(const std::string& text) {
  in_addr address{};
  if (::inet_pton(AF_INET, text.c_str(), &address) != 1)
    return Error::invalidArgument("want an IPv4 address, got " + quoteForMessage(text));
  return {};
}

std::string boolName(bool value) { return value ? "true" : "false"; }

ConfigOption boolOption(const char* name, const char* def, const char* help, bool DaemonConfig::*member) {
  return {name,
          def,
          help,
          false,
          [member](DaemonConfig& c, const std::string& v) -> Result<void> {
            VRI_ASSIGN_OR_RETURN(c.*member, parseBool(v));
            return {};
          },
          [member](const DaemonConfig& c) { return boolName(c.*member); }};
}

ConfigOption takeOption(const char* name, const char* def, const char* help, bool CpuTakeOptions::*member) {
  return {name,
          def,
          help,
          false,
          [member](DaemonConfig& c, const std::string& v) -> Result<void> {
            VRI_ASSIGN_OR_RETURN(c.take.*member, parseBool(v));
            return {};
          },
          [member](const DaemonConfig& c) { return boolName(c.take.*member); }};
}

ConfigOption stringOption(const char* name, const char* def, const char* help, std::string DaemonConfig::*member,
                          bool absolute) {
  return {name,
          def,
          help,
          false,
          [member, absolute](DaemonConfig& c, const std::string& v) -> Result<void> {
            if (absolute) {
              VRI_ASSIGN_OR_RETURN(c.*member, parseAbsolutePath(v));
            } else {
              c.*member = v;
            }
            return {};
          },
          [member](const DaemonConfig& c) { return c.*member; }};
}

ConfigOption optionalPathOption(const char* name, const char* help, std::string DaemonConfig::*member,
                                const char* def) {
  return {name,
          def,
          help,
          false,
          [member](DaemonConfig& c, const std::string& v) -> Result<void> {
            if (v.empty()) {
              (c.*member).clear();
              return {};
            }
            VRI_ASSIGN_OR_RETURN(c.*member, parseAbsolutePath(v));
            return {};
          },
          [member](const DaemonConfig& c) { return c.*member; }};
}

ConfigOption quantityOption(const char* name, const char* def, const char* help, Quantity NodeReservations::*member) {
  return {name,
          def,
          help,
          false,
          [member](DaemonConfig& c, const std::string& v) -> Result<void> {
            VRI_ASSIGN_OR_RETURN(c.reservations.*member, Quantity::parse(v));
            return {};
          },
          [member](const DaemonConfig& c) { return (c.reservations.*member).toString(); }};
}

}  // namespace vri::config_option
