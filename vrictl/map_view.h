// vrictl map: the machine drawn as packages, NUMA nodes and cores, each CPU
// marked with who holds it, with a legend, and how busy each CPU is. Fits 256 CPUs in 80 columns.
#pragma once

#include <string>

#include "proto/vri.pb.h"
#include "vrictl/terminal_style.h"

namespace vri::ctl {

// With `busy` (a usage round), a second drawing of the same cores shows each CPU's busy share over
// the round's interval: '.' under 5 %, '1'-'9' tens of percent, '#' 95 % or more.
std::string formatMap(const v1::Node& node, const v1::TenantList& tenants, const TerminalStyle& style,
                      const v1::UsageSample* busy = nullptr);

// The same as JSON: one object per CPU with its place and holder (and busy share, with `busy`).
std::string mapAsJson(const v1::Node& node, const v1::TenantList& tenants, const v1::UsageSample* busy = nullptr);

}  // namespace vri::ctl
