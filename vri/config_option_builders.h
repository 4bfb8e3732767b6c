// What the option table (config_options.cc) is built from: the parsers of its value kinds, each
// with the message that names what was wanted, and builders for the option shapes most options
// share (a flag, a CPU-take flag, a string or path, an optional path, a quantity).
#pragma once

#include <cstdint>
#include <string>

#include "vri/daemon_config.h"

namespace vri::config_option {

Result<bool> parseBool(const std::string& text);
Result<int64_t> parseInteger(const std::string& text, int64_t min, int64_t max);
Result<uint64_t> parseBytes(const std::string& text);
Result<std::string> parseAbsolutePath(const std::string& text);
Result<void> parseIpv4Address(const std::string& text);
std::string boolName(bool value);

ConfigOption boolOption(const char* name, const char* def, const char* help, bool DaemonConfig::*member);
ConfigOption takeOption(const char* name, const char* def, const char* help, bool CpuTakeOptions::*member);
// `absolute`: the value must be an absolute path.
ConfigOption stringOption(const char* name, const char* def, const char* help, std::string DaemonConfig::*member,
                          bool absolute);
// An absolute path, or empty for none.
ConfigOption optionalPathOption(const char* name, const char* help, std::string DaemonConfig::*member,
                                const char* def = "");
ConfigOption quantityOption(const char* name, const char* def, const char* help, Quantity NodeReservations::*member);

}  // namespace vri::config_option
